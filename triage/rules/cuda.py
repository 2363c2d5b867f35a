"""CUDA runtime errors that are not memory exhaustion."""

from __future__ import annotations

from triage.rules import ROOT, rule

RULES = [
    rule(
        "cuda.device_assert",
        "cuda_error",
        ROOT,
        ["device-side assert", "Assertion `"],
        r"device-side assert triggered|Assertion `.{0,200}` failed",
        ["debug_cuda", "fix_data_file"],
        0.85,
        "a CUDA kernel assertion fired (often an index out of range, e.g. a label or token id)",
    ),
    rule(
        "cuda.cublas",
        "cuda_error",
        ROOT,
        ["CUBLAS_STATUS", "CUDNN_STATUS", "cuDNN error", "cublas", "CUFFT", "cuFFT", "CURAND", "CUSOLVER",
         "CUSPARSE"],
        # (a library calling cuBLASLt itself reports its own way: "cublasLt ran into an error!")
        r"CUBLAS_STATUS_(?!ALLOC_FAILED)\w+|CUDNN_STATUS_\w+|cuDNN error|[Cc]u[Bb][Ll][Aa][Ss](?:Lt)? (?:ran into an|"
        r"returned an?|reported an?) error|"
        # the other CUDA math libraries' own failures (FFT, random numbers, solvers, sparse)
        r"\b(?:CUFFT|cuFFT) error|CUFFT_(?:EXEC_FAILED|INTERNAL_ERROR|INVALID_\w+)|CURAND_STATUS_\w+|"
        r"CUSOLVER_STATUS_(?!ALLOC_FAILED)\w+|CUSPARSE_STATUS_(?!ALLOC_FAILED)\w+",
        ["pin_versions", "debug_cuda"],
        0.85,
        "a cuBLAS/cuDNN call failed (commonly a CUDA toolkit/library build that does not match the GPU)",
    ),
    rule(
        "cuda.cudnn_no_plan",
        "cuda_error",
        ROOT,
        ["cuDNN Frontend error", "execution plan", "cudnn_frontend"],
        # cuDNN's graph API (the cuDNN attention backend of SDPA, fused convolutions) has no kernel for this
        # shape, dtype or GPU: a backend choice, not a broken GPU
        r"cuDNN Frontend error|\[cudnn_frontend\] Error|No (?:valid )?execution plans? (?:support|found|built|for)",
        ["fix_config", "pin_versions"],
        0.85,
        "cuDNN has no kernel plan for this operation's shape or dtype: turn its backend off for this op "
        "(torch.backends.cuda.enable_cudnn_sdp(False), another attention implementation) or change releases",
    ),
    rule(
        "cuda.misaligned",
        "cuda_error",
        ROOT,
        ["misaligned address"],
        r"misaligned address",
        ["fix_config", "debug_cuda"],
        0.85,
        "a CUDA kernel read a misaligned address (often fp16 kernels on odd tensor shapes)",
    ),
    rule(
        # a GPU in exclusive-process compute mode already held by another process (a stale job), or one the
        # driver cannot give out: nothing in the job's code, and the job can run without that GPU
        "cuda.device_busy",
        "cuda_error",
        ROOT,
        ["busy or unavailable"],
        r"CUDA-capable devices? (?:is/are|are|is) busy or unavailable",
        ["fix_config", "replace_hardware", "debug_cuda"],
        0.85,
        "a GPU is held by another process (exclusive compute mode) or unavailable: free it (end the stale "
        "process, compute mode Default) or leave it out with CUDA_VISIBLE_DEVICES",
    ),
    rule(
        "cuda.too_many_peers",
        "cuda_error",
        ROOT,
        ["peer mapping resources exhausted"],
        # CUDA's own error (cudaErrorTooManyPeers): one process driving more GPUs than CUDA lets peer with each other (8): nn.DataParallel across every
        # GPU of a large node, which a script started with plain `python` gets from HF Trainer
        r"peer mapping resources exhausted",
        ["fix_config"],
        0.85,
        "one process uses more GPUs than CUDA can map as peers (DataParallel across a large node): launch one "
        "process per GPU (torchrun) or limit CUDA_VISIBLE_DEVICES",
    ),
    rule(
        "cuda.illegal_access",
        "cuda_error",
        ROOT,
        ["illegal memory access", "illegal instruction", "unspecified launch failure"],
        r"illegal memory access|illegal instruction|unspecified launch failure",
        ["debug_cuda", "pin_versions"],
        0.8,
        "a CUDA kernel crashed",
    ),
    rule(
        "cuda.no_kernel_image",
        "cuda_error",
        ROOT,
        ["no kernel image", "invalid device function", "not compatible with the current PyTorch"],
        r"no kernel image is available|invalid device function|not compatible with the current PyTorch installation",
        ["pin_versions"],
        0.85,
        "the installed PyTorch build has no kernels for this GPU",
    ),
    rule(
        "cuda.generic",
        "cuda_error",
        ROOT,
        ["CUDA error", "cuda runtime error"],
        r"CUDA error: (?!out of memory)|cuda runtime error \(\d+\)",
        ["debug_cuda", "pin_versions"],
        0.55,
        "a CUDA runtime error",
    ),
]
