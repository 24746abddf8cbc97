"""Deterministic inputs that look like what each real model sees after its own preprocessing.

Noise is a poor input for a trained network (activations saturate or vanish, so a wrong kernel can
still match); these are smooth synthetic scenes, text lines, speech-like audio, spectrogram-like
features and file bytes, built with numpy from a seed, so no data set is needed.
"""
from __future__ import annotations

import numpy as np

IMAGENET_MEAN = np.float32([0.485, 0.456, 0.406])
IMAGENET_STD = np.float32([0.229, 0.224, 0.225])


def scene(height: int, width: int, seed: int) -> np.ndarray:
    """An RGB picture in [0, 1], HWC: a lit background, soft blobs of colour, a few hard-edged
    rectangles (edges for the detectors) and a little sensor noise."""
    rng = np.random.default_rng(seed)
    y, x = np.mgrid[0:height, 0:width].astype(np.float32)
    y, x = y / max(height - 1, 1), x / max(width - 1, 1)
    image = np.empty((height, width, 3), np.float32)
    for c in range(3):
        image[..., c] = 0.35 + 0.25 * rng.uniform() * x + 0.25 * rng.uniform() * y
    for _ in range(6):
        cy, cx, r = rng.uniform(0.1, 0.9), rng.uniform(0.1, 0.9), rng.uniform(0.05, 0.25)
        blob = np.exp(-((y - cy) ** 2 + (x - cx) ** 2) / (2 * r * r))
        image += blob[..., None] * rng.uniform(-0.4, 0.4, 3).astype(np.float32)
    for _ in range(3):
        y0, x0 = rng.integers(0, height), rng.integers(0, width)
        h, w = rng.integers(height // 10 + 1, height // 3 + 2), rng.integers(width // 10 + 1, width // 3 + 2)
        image[y0:y0 + h, x0:x0 + w] = rng.uniform(0, 1, 3).astype(np.float32)
    image += rng.normal(0, 0.02, image.shape).astype(np.float32)
    return np.clip(image, 0, 1).astype(np.float32)


def document(height: int, width: int, seed: int) -> np.ndarray:
    """An RGB page in [0, 1], HWC, for the OCR detectors and recognizers: tinted paper with lines of
    text-like strokes (one line when the height is a text line's, as for a recognizer's crop)."""
    rng = np.random.default_rng(seed)
    gray = np.full((height, width), 0.92, np.float32)
    line = min(height, 48)
    for top in range(0, height - line + 1, line + line // 3 + 1):
        margin = int(rng.integers(0, max(width // 8, 1)))
        length = int(rng.integers(width // 2, width - margin + 1))
        gray[top:top + line, margin:margin + length] = text_line(line, length, seed=int(rng.integers(1 << 30)))[0, 0]
    tint = rng.uniform(0.9, 1.0, 3).astype(np.float32)
    return np.clip(gray[..., None] * tint, 0, 1).astype(np.float32)


def image_nhwc(height: int, width: int, low: float, high: float, seed: int) -> np.ndarray:
    """[1, H, W, 3] in [low, high]: MediaPipe's ImageToTensor output range for the model."""
    return (low + (high - low) * scene(height, width, seed))[None].astype(np.float32)


def image_nchw(batch: int, height: int, width: int, seed: int, normalize: str = "unit", text: bool = False) -> np.ndarray:
    """[N, 3, H, W] of scenes, or of documents when `text`: "unit" [0, 1] (YOLO exports), "pixels" [0, 255]
    (YOLOX), "imagenet" (x - mean) / std (PaddleOCR det, PP-LCNet), "symmetric" (x - 0.5) / 0.5
    (PaddleOCR rec and cls)."""
    picture = document if text else scene
    images = np.stack([picture(height, width, seed + i) for i in range(batch)])
    if normalize == "pixels":
        images = images * 255
    elif normalize == "imagenet":
        images = (images - IMAGENET_MEAN) / IMAGENET_STD
    elif normalize == "symmetric":
        images = (images - 0.5) / 0.5
    elif normalize != "unit":
        raise ValueError(f"unknown normalization {normalize!r}")
    return np.ascontiguousarray(images.transpose(0, 3, 1, 2)).astype(np.float32)


def text_line(height: int, width: int, seed: int) -> np.ndarray:
    """[1, 1, H, W] grayscale in [0, 1], as ddddocr feeds its OCR models: light paper, dark strokes of
    glyph-sized boxes and bars, a little blur-like noise."""
    rng = np.random.default_rng(seed)
    line = np.full((height, width), 0.92, np.float32) + rng.normal(0, 0.02, (height, width)).astype(np.float32)
    x = int(rng.integers(2, 8))
    while x < width - 4:
        glyph = int(rng.integers(height // 3, height // 2 + 1))
        top = int(rng.integers(height // 6, height // 3 + 1))
        for _ in range(int(rng.integers(2, 5))):  # a few strokes per glyph
            if rng.uniform() < 0.5:
                y0, thick = top + int(rng.integers(0, glyph)), int(rng.integers(2, 5))
                line[y0:y0 + thick, x:x + glyph // 2 + 2] = rng.uniform(0.05, 0.3)
            else:
                x0, thick = x + int(rng.integers(0, glyph // 2 + 1)), int(rng.integers(2, 5))
                line[top:top + glyph, x0:x0 + thick] = rng.uniform(0.05, 0.3)
        x += glyph // 2 + int(rng.integers(4, 10))
    return np.clip(line, 0, 1)[None, None].astype(np.float32)


def speech(samples: int, seed: int, rate: int = 16000) -> np.ndarray:
    """A mono signal in [-1, 1]: a voiced tone with harmonics whose loudness comes and goes, over noise."""
    rng = np.random.default_rng(seed)
    t = np.arange(samples) / rate
    pitch = 120 + 30 * np.sin(2 * np.pi * 0.7 * t)
    phase = 2 * np.pi * np.cumsum(pitch) / rate
    voice = sum(np.sin(k * phase) / k for k in range(1, 6))
    envelope = 0.5 + 0.5 * np.sin(2 * np.pi * 1.5 * t)
    return (0.25 * envelope * voice + 0.01 * rng.standard_normal(samples)).astype(np.float32)


def audio_windows(count: int, window: int, context: int, seed: int) -> list[np.ndarray]:
    """Consecutive [1, context + window] windows of one signal, each starting with the previous window's
    last `context` samples, as silero-vad's wrapper feeds it (64 + 512 samples at 16 kHz)."""
    signal = np.concatenate([np.zeros(context, np.float32), speech(count * window, seed)])
    return [signal[None, i * window:i * window + context + window].copy() for i in range(count)]


def wakeword_features(calls: int, frames: int, bins: int, scale: float, zero_point: int, seed: int) -> list[np.ndarray]:
    """int8 [1, frames, bins] per call: micro_frontend-like log-mel energies (0..26, as pymicro-wakeword
    feeds them) quantized with the model's input scale and zero point: a smooth spectral envelope with a
    formant that moves over time, one call after the other."""
    rng = np.random.default_rng(seed)
    total = calls * frames
    t = np.arange(total)[:, None].astype(np.float32)
    f = np.arange(bins)[None, :].astype(np.float32)
    formant = bins * (0.3 + 0.2 * np.sin(t / 7.0))
    energy = 6 + 14 * np.exp(-((f - formant) ** 2) / 40.0) * (0.6 + 0.4 * np.cos(t / 3.0)) - 0.08 * f
    energy += rng.normal(0, 0.7, energy.shape)
    q = np.clip(np.round(np.clip(energy, 0, 26) / scale) + zero_point, -128, 127).astype(np.int8)
    return [q[None, i * frames:(i + 1) * frames].copy() for i in range(calls)]


def file_bytes(batch: int, seed: int, block: int = 1024, padding: int = 256) -> np.ndarray:
    """int32 [N, 2 * block]: magika's features of a text file: the first and the last `block` bytes after
    stripping whitespace, short files padded with `padding` (magika's padding token)."""
    rng = np.random.default_rng(seed)
    words = ["def", "return", "import", "numpy", "class", "self", "value", "for", "in", "if", "else", "print"]
    rows = []
    for i in range(batch):
        lines = []
        for n in range(int(rng.integers(20, 200))):
            indent = "    " * int(rng.integers(0, 3))
            lines.append(indent + " ".join(rng.choice(words, int(rng.integers(2, 8)))) + (":" if n % 4 == 0 else ""))
        data = ("\n".join(lines) + "\n").encode().strip()
        begin = list(data[:block]) + [padding] * max(0, block - len(data))
        end = [padding] * max(0, block - len(data)) + list(data[-block:])
        rows.append(begin + end)
    return np.asarray(rows, np.int32)


def one_hot(ids: list[list[int]], depth: int) -> np.ndarray:
    """float32 [N, T, depth] one-hot rows (Keras seq2seq inputs)."""
    out = np.zeros((len(ids), len(ids[0]), depth), np.float32)
    for n, row in enumerate(ids):
        out[n, np.arange(len(row)), row] = 1.0
    return out


def spell(word: str, alphabet: str, length: int, pad: int) -> list[int]:
    """The ids of `word`'s characters (id = position in `alphabet`), padded with `pad` to `length`."""
    return [alphabet.index(c) for c in word] + [pad] * (length - len(word))
