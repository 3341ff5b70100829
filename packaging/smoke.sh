#!/usr/bin/env bash
# The installable Punctum, tried as a user gets it (make package-check; not part of make test).
#  1. The wheel: installed into a fresh virtual environment in a temporary folder, far from the
#     repository, with an empty HOME: --version, punctuate on the packaged sample, the editor on a
#     virtual X screen.
#  2. The bundle: the archive unpacked into another temporary folder with another empty HOME,
#     install.sh, then from the installed bundle with no Python and no ffmpeg on the PATH:
#     punctuate (timed, its peak memory measured), punctuate listening to the sample's video,
#     transcribe the video and punctuate what it wrote, the editor's start timed (window on
#     screen; first suggestions on the sample), then uninstall.sh --purge, after which nothing of
#     Punctum may be left.
# Prints one JSON line of figures at the end. Needs xvfb-run (installed with apt where it can).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
PYTHON=${PYTHON:-$(command -v python3.11 || command -v python3)}
BUNDLE=$(ls "$ROOT"/dist/Punctum-*-linux-*.tar.xz 2>/dev/null | tail -1 || true)
[ -n "$BUNDLE" ] || { echo "smoke: no bundle in dist/; run make package first" >&2; exit 1; }
command -v xvfb-run >/dev/null || { echo "smoke: xvfb-run is needed (apt install xvfb)" >&2; exit 1; }

WORK=$(mktemp -d /tmp/punctum-smoke-XXXXXX)
trap 'rm -rf "$WORK"' EXIT
say() { echo "smoke: $*" >&2; }
fail() { echo "smoke: FAILED: $*" >&2; exit 1; }
now() { date +%s.%N; }

# An editor run on the sample under a virtual screen; prints "window_seconds suggestions_seconds".
# Each run keeps its autosave in a folder of its own, so it makes its suggestions afresh rather
# than restoring an earlier run's.
editor_run() {  # $1: program, $2: HOME, $3: PATH
    local run=$RANDOM began
    local log="$WORK/startup-$run.jsonl"
    began=$(now)
    env -i HOME="$2" PATH="$3" PUNCTUM_STARTUP_LOG="$log" PUNCTUM_DATA_DIR="$2/.local/share/punctum/run-$run" \
        timeout 60 xvfb-run -a -s "-screen 0 1600x1000x24" "$1" gui --sample >/dev/null 2>&1 &
    local pid=$!
    for _ in $(seq 1 600); do
        grep -q suggestions_shown "$log" 2>/dev/null && break
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.1
    done
    kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true
    pkill -f "Xvfb.*$WORK" 2>/dev/null || true
    [ -s "$log" ] || fail "the editor never showed its window ($1)"
    "$PYTHON" - "$log" "$began" <<'PY'
import json, sys
events = {e["event"]: e["time"] for e in map(json.loads, open(sys.argv[1]))}
began = float(sys.argv[2])
def since(name): return round(events[name] - began, 2) if name in events else None
print(since("window_shown"), since("suggestions_shown"))
PY
}

# --- 1. the wheel -------------------------------------------------------------------------------
say "building the wheel"
WHEEL=$("$ROOT/.venv/bin/python" "$ROOT/packaging/build_wheel.py" "$WORK/wheel" | tail -1)
mkdir -p "$WORK/venv-home" "$WORK/elsewhere"
cd "$WORK/elsewhere"
"$PYTHON" -m venv "$WORK/venv"
say "installing $(basename "$WHEEL") into a fresh environment"
"$WORK/venv/bin/python" -m pip install --quiet --disable-pip-version-check "$WHEEL" 2>&1 | grep -v "^WARNING: Location" || true
VENV_PATH="$WORK/venv/bin:/usr/bin:/bin"
run_venv() { env -i HOME="$WORK/venv-home" PATH="$VENV_PATH" "$@"; }
run_venv punctum --version | grep -q "^punctum " || fail "wheel: punctum --version"
SAMPLE=$(run_venv python -c "from app.core.bundled import sample_dir; print(sample_dir())")
case "$SAMPLE" in "$ROOT"*) fail "wheel: the sample comes from the repository, not the package";; esac
run_venv punctum punctuate "$SAMPLE/sample.srt" -o "$WORK/wheel-out.srt" >/dev/null 2>&1 \
    || fail "wheel: punctuate on the packaged sample"
grep -q "Repair Cafe\." "$WORK/wheel-out.srt" || fail "wheel: the sample came back unpunctuated"
run_venv python -c "import importlib.util as u, sys; sys.exit(u.find_spec('torch') is not None)" \
    || fail "wheel: installing it brought torch"
[ ! -d "$WORK/venv-home/.cache/punctum/runtime" ] || fail "wheel: the model was exported at run time"
read -r WHEEL_WINDOW WHEEL_SUGGESTIONS < <(editor_run punctum "$WORK/venv-home" "$VENV_PATH")
[ "$WHEEL_WINDOW" != None ] || fail "wheel: no editor window"
say "wheel: version, punctuate and editor (window at ${WHEEL_WINDOW} s) work"

# --- 2. the bundle ------------------------------------------------------------------------------
mkdir -p "$WORK/unpacked" "$WORK/home"
tar -xJf "$BUNDLE" -C "$WORK/unpacked"
UNPACKED=$(ls -d "$WORK"/unpacked/Punctum-*)
# No virtual environment, no repository, and no ffmpeg: a folder of the system's own tools the
# bundle needs (sh, its file tools, xvfb-run's), without ffmpeg, ffprobe or python.
mkdir -p "$WORK/system-bin"
for tool in sh bash cat cp mv rm ln mkdir rmdir sed readlink dirname basename find ls chmod \
            update-mime-database update-desktop-database gtk-update-icon-cache xdg-mime \
            xvfb-run Xvfb xauth mcookie getopt kill sleep tail grep awk date mktemp timeout touch fmt \
            true tr md5sum head env od hexdump cut wc sort uniq ps pkill; do
    found=$(command -v "$tool" 2>/dev/null) && ln -sf "$found" "$WORK/system-bin/$tool"
done
HOME_PATH="$WORK/home/.local/bin:$WORK/system-bin"
env -i HOME="$WORK/home" PATH="$HOME_PATH" sh "$UNPACKED/install.sh" >&2
run_home() { env -i HOME="$WORK/home" PATH="$HOME_PATH" "$@"; }
run_home punctum --version | grep -q "^punctum " || fail "bundle: punctum --version"
BUNDLED_SAMPLE="$WORK/home/.local/share/punctum/app/_internal/app/_bundled/sample"
[ -f "$BUNDLED_SAMPLE/sample.srt" ] || fail "bundle: no packaged sample"
# The first punctuate of 10 words from a fresh install, timed with its peak memory.
printf '1\n00:00:00,000 --> 00:00:04,000\nso this is the repair cafe where people bring broken things\n' > "$WORK/ten.srt"
MEASURE=(); [ -x /usr/bin/time ] && MEASURE=(/usr/bin/time -f "%M" -o "$WORK/ten.memory")
began=$(now)
env -i HOME="$WORK/home" PATH="$HOME_PATH" "${MEASURE[@]}" \
    punctum punctuate "$WORK/ten.srt" -o "$WORK/ten-out.srt" >/dev/null 2>"$WORK/ten.err" \
    || fail "bundle: punctuate 10 words: $(tail -1 "$WORK/ten.err")"
FIRST_PUNCTUATE=$("$PYTHON" -c "print(round($(now) - $began, 2))")
FIRST_PUNCTUATE_MB=null
[ -s "$WORK/ten.memory" ] && FIRST_PUNCTUATE_MB=$(( $(tail -1 "$WORK/ten.memory") / 1024 ))
began=$(now)
env -i HOME="$WORK/home" PATH="$HOME_PATH" punctum punctuate "$WORK/ten.srt" -o "$WORK/ten-again.srt" >/dev/null 2>&1 \
    || fail "bundle: punctuate 10 words again"
SECOND_PUNCTUATE=$("$PYTHON" -c "print(round($(now) - $began, 2))")
run_home punctum punctuate "$BUNDLED_SAMPLE/sample.srt" -o "$WORK/bundle-out.srt" >/dev/null 2>&1 \
    || fail "bundle: punctuate on the packaged sample"
run_home punctum punctuate "$BUNDLED_SAMPLE/sample.srt" --media "$BUNDLED_SAMPLE/sample.mp4" \
    --suggestions "$WORK/heard.json" -o "$WORK/bundle-heard.srt" >/dev/null 2>"$WORK/heard.err" \
    || fail "bundle: punctuate with the sample's video: $(tail -1 "$WORK/heard.err")"
grep -q '^  "evidence": "heard"' "$WORK/heard.json" || fail "bundle: the listener heard nothing in the sample's video"
[ ! -d "$WORK/home/.cache/punctum/runtime" ] || fail "bundle: the model was exported at run time"
[ ! -d "$WORK/home/.local/share/punctum/app/_internal/torch" ] || fail "bundle: torch is inside"
[ -z "$(ls -d "$WORK"/home/.cache/punctum/whisper-* 2>/dev/null)" ] || fail "bundle: the recogniser's model was made at run time"
cmp -s "$WORK/bundle-out.srt" "$WORK/wheel-out.srt" || fail "bundle and wheel punctuate the sample differently"
run_home punctum transcribe "$BUNDLED_SAMPLE/sample.mp4" -o "$WORK/transcribed.vtt" >/dev/null 2>"$WORK/tr.err" \
    || fail "bundle: transcribe: $(tail -1 "$WORK/tr.err")"
grep -q "<00:00:0" "$WORK/transcribed.vtt" || fail "bundle: transcribed captions without word times"
run_home punctum punctuate "$WORK/transcribed.vtt" -o "$WORK/transcribed-punctuated.vtt" >/dev/null 2>&1 \
    || fail "bundle: punctuate the transcribed captions"
say "bundle: punctuate (${FIRST_PUNCTUATE} s first), listening, transcribe work"
read -r _ _ < <(editor_run punctum "$WORK/home" "$HOME_PATH")  # a first start fills the caches
read -r WINDOW SUGGESTIONS < <(editor_run punctum "$WORK/home" "$HOME_PATH")
[ "$WINDOW" != None ] || fail "bundle: no editor window"
[ "$SUGGESTIONS" != None ] || fail "bundle: no suggestions on the sample"
[ -f "$WORK/home/.local/share/applications/punctum.desktop" ] || fail "bundle: no menu entry"
run_home sh "$WORK/home/.local/share/punctum/app/uninstall.sh" --purge >&2
LEFT=$(cd "$WORK/home" && find . -mindepth 1 \( -iname '*punctum*' -o -path './.local/bin/*' \) | head -5)
[ -z "$LEFT" ] || fail "uninstall left: $LEFT"

PACKED=$(du -m "$BUNDLE" | cut -f1)
UNPACKED_MB=$(du -sm "$UNPACKED" | cut -f1)
echo "{\"bundle\": \"$(basename "$BUNDLE")\", \"packed_mb\": $PACKED, \"unpacked_mb\": $UNPACKED_MB," \
     "\"first_punctuate_10_words_seconds\": $FIRST_PUNCTUATE, \"second_punctuate_10_words_seconds\": $SECOND_PUNCTUATE," \
     "\"first_punctuate_peak_mb\": $FIRST_PUNCTUATE_MB, \"window_seconds_warm\": $WINDOW," \
     "\"suggestions_seconds_warm\": $SUGGESTIONS, \"wheel_window_seconds\": $WHEEL_WINDOW, \"uninstall_clean\": true}"
