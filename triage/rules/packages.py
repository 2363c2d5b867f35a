"""Which missing module is an installed package's and which is the project's own.

"No module named 'X'" means a package missing or too old when X is a library (or a library's compiled
extension), and an incomplete copy of the job's own code when X is one of the team's modules: a node whose
copy of the folder lacks `textnorm.py`, a run started from another working directory. The engine cannot
look at the machine, so it tells them apart by name: the standard library, the packages of the training
ecosystem and the usual names of compiled extensions count as installed software; any other top-level
name imported by the script's own code is the project's.
"""

from __future__ import annotations

import re
import sys

# top-level import names (not distribution names) of the packages training jobs install
ECOSYSTEM = frozenset("""
torch torchvision torchaudio torchtext torchdata torchao torchtune torchtitan torchmetrics torch_xla functorch
transformers datasets accelerate peft trl deepspeed bitsandbytes flash_attn flash_attn_interface xformers apex
triton vllm sglang tokenizers sentencepiece tiktoken safetensors huggingface_hub hf_transfer einops liger_kernel
unsloth unsloth_zoo llamafactory axolotl swift openrlhf verl ray megatron nemo nemo_aligner fairscale fairseq
fairseq2 colossalai lightning pytorch_lightning lightning_fabric lightning_utilities composer llmfoundry streaming
optimum auto_gptq gptqmodel awq autoawq hqq mamba_ssm causal_conv1d transformer_engine modelscope evaluate
sentence_transformers diffusers timm open_clip qwen_vl_utils decord av soundfile librosa cv2 PIL
numpy scipy pandas sklearn pyarrow polars jsonlines yaml omegaconf hydra tyro jsonargparse fire click typer
pydantic wandb tensorboard tensorboardX mlflow comet_ml neptune aim clearml swanlab tqdm rich psutil pynvml
GPUtil nvidia cupy numba packaging requests filelock fsspec s3fs gcsfs boto3 botocore google grpc protobuf
tensorflow jax jaxlib flax optax keras orbax mpi4py horovod zmq msgpack orjson ujson ninja setuptools pkg_resources
jinja2 markupsafe regex ftfy nltk jieba rouge_score rouge sacrebleu math_verify latex2sympy2 lm_eval spacy faiss
h5py zarr lmdb webdataset datatrove dill cloudpickle multiprocess matplotlib seaborn gradio openai anthropic
habana_frameworks intel_extension_for_pytorch ipex_llm onnx onnxruntime tensorrt pycuda grouped_gemm
megablocks stk bmtrain deepspeed_kernels flashinfer xformers_ops cut_cross_entropy galore_torch bitsandbytes_cuda
""".split())
# names compiled extensions are built under (apex's amp_C, fused_layer_norm_cuda, flash_attn_2_cuda, ...)
_COMPILED = re.compile(r"(?:_cuda|_C|_cpp|_ext|_kernels?|_lib|_ops|_cuda_kernels?)$|^_|^amp_C$", re.IGNORECASE)
_MISSING = re.compile(r"No module named ['‘\"`]?([A-Za-z_][\w.]*)")


def missing_module(message: str) -> str | None:
    """The module a "No module named 'X'" message names, or None."""
    found = _MISSING.search(message or "")
    return found.group(1) if found else None


def installed_software(module: str) -> bool:
    """The module belongs to the interpreter, an ecosystem package or a compiled extension."""
    top = module.split(".", 1)[0]
    return (top in sys.stdlib_module_names or top in ECOSYSTEM or top.lower() in ECOSYSTEM
            or bool(_COMPILED.search(top)))
