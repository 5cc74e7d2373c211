"""The whole-step measurement script (tools/measure/llama_blocks_step.py) without a GPU: its plan against a hand count
and against dtsim's model of the same step, its kernel classes on names the libraries give their kernels, and its
summary of a profiled step on a trace written here by hand.
"""
import importlib.util
import subprocess
import sys

from test_dtsim import SOURCE, cli

SCRIPT = SOURCE / "tools" / "measure" / "llama_blocks_step.py"
spec = importlib.util.spec_from_file_location("llama_blocks_step", SCRIPT)
step = importlib.util.module_from_spec(spec)
spec.loader.exec_module(step)  # torch is imported only to measure: the rest runs anywhere


def test_parameters_by_hand():
    # A Llama 3 8B block: q 4096 x 4096, k and v 4096 x 1024 each (8 KV heads of 128), o 4096 x 4096, gate, up and
    # down 3 x 4096 x 14336, two norms of 4096: 25,165,824 + 16,777,216 + 176,160,768 + 8,192 = 218,112,000. Four of
    # them, the embedding and the LM head (2 x 128,256 x 4096 = 1,050,673,152) and the final norm: 1,923,125,248.
    assert step.parameters(step.LLAMA3_8B, 4) == 4 * 218_112_000 + 1_050_673_152 + 4096 == 1_923_125_248


def test_plan_is_dtsims_step(tmp_path):
    done = subprocess.run([sys.executable, str(SCRIPT), "--plan"], capture_output=True, text=True, check=True)
    plan = __import__("json").loads(done.stdout)
    assert plan["tokens_per_step"] == 4096 and plan["blocks"] == 4
    # dtsim's companion scenario holds the same weights: its fp32 gradients are 4 bytes a parameter.
    result = cli("run", SOURCE / "tools" / "measure" / "llama_blocks_step.json", tmp_path=tmp_path)
    gradients = next(i for i in result["memory_per_gpu"]["items"] if i["name"] == "gradients")
    assert gradients["bytes"] == 4 * plan["parameters"]


def test_kernel_classes_from_library_names():
    names = {
        "nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_NNT": "gemm",
        "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1_execute_segment_k_off_kernel"
        "__5x_cublas": "gemm",
        "void cutlass::Kernel2<cutlass_80_tensorop_bf16_s16816gemm_relu_bf16_64x64_64x4_tn_align8>(...)": "gemm",
        "ampere_bf16_s16816gemm_bf16_128x128_ldg8_f2f_stages_64x3_tn": "gemm",
        "void flash_fwd_kernel<Flash_fwd_kernel_traits<128, 128, 64, 4, false, false, cutlass::bfloat16_t>>(...)":
        "attention",
        "cudnn_generated_fort_native_sdpa_sm90_knob_7_64x128x128_4x1x1_kernel0_0": "attention",
        "void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>, ...>(...)": "memory",
        "void at::native::(anonymous namespace)::multi_tensor_apply_kernel<...>(...)": "memory",
        "Memcpy DtoD (Device -> Device)": "copy",
        "Memset (Device)": "copy",
    }
    assert {n: step.kernel_class(n) for n in names} == names


def test_summary_of_a_profiled_step_by_hand():
    # A GEMM from 0 to 100 us, attention 150-200 on one stream and an elementwise kernel 180-220 on another, a copy
    # 300-310; a CPU op is not a GPU kernel. Span 310 us, some kernel running 100 + (150..220) 70 + 10 = 180 us, gaps 130.
    events = [
        {"ph": "X", "cat": "kernel", "name": "nvjet_sm90_tst_128x128", "ts": 0, "dur": 100},
        {"ph": "X", "cat": "kernel", "name": "flash_bwd_kernel", "ts": 150, "dur": 50},
        {"ph": "X", "cat": "kernel", "name": "vectorized_elementwise_kernel", "ts": 180, "dur": 40},
        {"ph": "X", "cat": "gpu_memcpy", "name": "Memcpy DtoD (Device -> Device)", "ts": 300, "dur": 10},
        {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "ts": 0, "dur": 500},
    ]
    s = step.summarize(events)
    assert s["kernels"] == 4
    assert abs(s["span_s"] - 310e-6) < 1e-12 and abs(s["busy_s"] - 180e-6) < 1e-12 and abs(s["gaps_s"] - 130e-6) < 1e-12
    assert {k: v["launches"] for k, v in s["classes"].items()} == {"gemm": 1, "attention": 1, "memory": 1, "copy": 1}
    assert abs(s["classes"]["memory"]["seconds"] - 40e-6) < 1e-12
    assert step.summarize([])["kernels"] == 0
