"""This core's peak f32 FMA throughput: a loop of independent vector FMAs, generated with llvmlite and
run in-process, one thread.

    python benchmarks/kernels/fma_peak.py [--seconds 0.3]

For each vector width the CPU has (128/256/512 bits), CHAINS accumulators each take one FMA per
iteration; their chains are independent, so the loop is bound by how many FMAs the core issues per
cycle, not by the FMA latency. Reports GFLOP/s (an FMA is 2 flops) as the best of several timed
runs. fraction_of_peak.py divides each kernel's GFLOP/s by the figure for the host target's width.
Not a test: the numbers are this machine's.
"""
from __future__ import annotations

import argparse
import ctypes
import time

import llvmlite.binding as llvm

from iree_py.codegen.llvm.target_machine import cpu_features, create_target_machine
from iree_py.targets import load_target

CHAINS = 12       # independent accumulators: latency 4 x 2 ports needs at least 8
UNROLL = 4        # FMAs per chain per loop iteration
RUNS = 7
_ENGINES: list = []  # an MCJIT engine owns its module and target machine: keep them alive


def _loop_ir(lanes: int) -> str:
    """i64 fma_loop(i64 n, float* out): n iterations of CHAINS x UNROLL <lanes x float> FMAs; the
    accumulators are summed into out[0..lanes) so nothing is dead."""
    vec = f"<{lanes} x float>"
    lines = [
        f"declare {vec} @llvm.fma.v{lanes}f32({vec}, {vec}, {vec})",
        "define void @fma_loop(i64 %n, ptr %out) {",
        "entry:",
        f"  %a = insertelement {vec} zeroinitializer, float 0x3FF0000020000000, i32 0",
        f"  %m = shufflevector {vec} %a, {vec} poison, <{lanes} x i32> zeroinitializer",
        "  br label %loop",
        "loop:",
        "  %i = phi i64 [0, %entry], [%i.next, %loop]",
    ]
    for c in range(CHAINS):
        lines.append(f"  %acc{c} = phi {vec} [zeroinitializer, %entry], [%acc{c}.{UNROLL}, %loop]")
    for u in range(UNROLL):
        for c in range(CHAINS):
            prev = f"%acc{c}" if u == 0 else f"%acc{c}.{u}"
            lines.append(f"  %acc{c}.{u + 1} = call {vec} @llvm.fma.v{lanes}f32({vec} %m, {vec} {prev}, {vec} %m)")
    lines += ["  %i.next = add i64 %i, 1", "  %more = icmp ult i64 %i.next, %n",
              "  br i1 %more, label %loop, label %done", "done:"]
    total = f"%acc0.{UNROLL}"
    for c in range(1, CHAINS):
        lines.append(f"  %sum{c} = fadd {vec} {total}, %acc{c}.{UNROLL}")
        total = f"%sum{c}"
    lines += [f"  store {vec} {total}, ptr %out, align 4", "  ret void", "}"]
    return "\n".join(lines)


def vector_widths_of_this_cpu() -> list[int]:
    """The f32 vector widths (bits) the host CPU can run FMAs on: on x86-64 those its features name
    (an x86 CPU without FMA3 has none), elsewhere the host target's own width."""
    host = load_target("host")
    if host.arch != "x86_64":
        return [host.vector_bits]
    features = set(cpu_features(host).split(","))
    if "+fma" not in features:
        return []
    return [128, 256] + ([512] if "+avx512f" in features else [])


def peak_gflops(vector_bits: int, seconds: float = 0.3) -> float:
    """Best-of-RUNS f32 GFLOP/s of the FMA loop at `vector_bits` on one thread."""
    lanes = vector_bits // 32
    machine = create_target_machine(load_target("host"))
    module = llvm.parse_assembly(_loop_ir(lanes))
    module.verify()
    engine = llvm.create_mcjit_compiler(module, machine)
    engine.finalize_object()
    _ENGINES.append((engine, machine))
    loop = ctypes.CFUNCTYPE(None, ctypes.c_int64, ctypes.c_void_p)(engine.get_function_address("fma_loop"))
    out = (ctypes.c_float * lanes)()
    flops_per_iteration = CHAINS * UNROLL * lanes * 2
    n = 1 << 16
    while True:  # size the loop to about `seconds`
        start = time.perf_counter()
        loop(n, ctypes.addressof(out))
        if time.perf_counter() - start > seconds / 4:
            break
        n *= 2
    best = float("inf")
    for _ in range(RUNS):
        start = time.perf_counter()
        loop(n, ctypes.addressof(out))
        best = min(best, time.perf_counter() - start)
    return n * flops_per_iteration / best / 1e9


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=0.3)
    args = parser.parse_args()
    host = load_target("host")
    print(f"host CPU {llvm.get_host_cpu_name()}; the host target's kernels use {host.vector_bits}-bit vectors")
    print("| vector bits | GFLOP/s (1 thread) | vector FMAs per ns |")
    print("|---:|---:|---:|")
    widths = vector_widths_of_this_cpu()
    if not widths:
        raise SystemExit("fma_peak: this x86-64 CPU has no FMA3 (the kernels then use separate multiplies and adds)")
    for bits in widths:
        g = peak_gflops(bits, args.seconds)
        print(f"| {bits} | {g:.1f} | {g / 2 / (bits // 32):.2f} |")


if __name__ == "__main__":
    main()
