"""Forms and meanings that blind sets 16-22 found in public threads, most from RL and inference-in-the-loop
stacks (Ray drivers, vLLM engines, compiled extensions, torch.compile, FSDP2): how the exception reaches the
log, and what its words mean."""

from __future__ import annotations

from triage_helpers import diagnose_text as _run


def _tb(frames: list[tuple[str, str]], last: str, lead: str = "") -> str:
    lines = [f"{lead}Traceback (most recent call last):"]
    for where, code in frames:
        lines += [f"{lead}  {where}", f"{lead}    {code}"]
    return "\n".join(lines + [f"{lead}{last}"]) + "\n"


CONFIG_CHECK = _tb([
    ('File "/work/rlkit/trainer/main.py", line 40, in main', "engine = build_engine(cfg)"),
    ('File "/venv/lib/python3.11/site-packages/fastserve/config.py", line 812, in __post_init__', "self._verify_args()"),
    ('File "/venv/lib/python3.11/site-packages/fastserve/config.py", line 840, in _verify_args', "raise ValueError("),
], "ValueError: max_batched_tokens (4096) is smaller than max_model_len (6144). Increase max_batched_tokens or "
   "decrease the maximum sequence length.")


def test_the_second_line_of_a_python_warning_is_what_was_warned_about_not_an_error(tmp_path):
    warning = ("(Worker pid=4411) /venv/lib/python3.11/site-packages/fastserve/about.py:8: RuntimeWarning: "
               "Failed to read the build hash:\n"
               "(Worker pid=4411) No module named 'fastserve._build'\n"
               "(Worker pid=4411)   from fastserve.about import __version__\n")
    result = _run(tmp_path, warning + CONFIG_CHECK)
    assert (result.category, result.root_cause.exception) == ("config_invalid", "ValueError")
    # the same line on its own, with no warning above it, is still an import failure
    alone = _run(tmp_path, "(Worker pid=4411) No module named 'fastserve._build'\n", name="alone.log")
    assert alone.category == "version_mismatch"


def test_a_config_class_verify_step_raising_valueerror_is_a_setting(tmp_path):
    assert _run(tmp_path, CONFIG_CHECK).category == "config_invalid"


def test_an_inference_engines_logger_lead_does_not_hide_its_traceback(tmp_path):
    lead = "(RolloutActor pid=9120) ERROR 03-14 05:06:07 [engine.py:588] "
    text = _tb([
        ('File "/venv/lib/python3.11/site-packages/fastserve/worker/runner.py", line 2001, in warm_up',
         "out = self.sampler(logits)"),
    ], "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 512.00 MiB. GPU 0 has a total capacity "
       "of 79.19 GiB of which 300.00 MiB is free.", lead=lead)
    result = _run(tmp_path, lead.replace("ERROR", "INFO") + "KV cache: 8,192 tokens\n" + text)
    assert (result.category, result.root_cause.exception) == ("gpu_oom", "OutOfMemoryError")


def test_no_ray_cluster_to_join_is_the_job_not_forming(tmp_path):
    text = _tb([
        ('File "/work/rlkit/trainer/main.py", line 48, in run', "ray.init(address='auto')"),
        ('File "/venv/lib/python3.11/site-packages/ray/_private/services.py", line 418, in get_address',
         "raise ConnectionError("),
    ], "ConnectionError: Could not find any running Ray instance. Please specify the one to connect to by "
       "setting `--address` flag or `RAY_ADDRESS` environment variable.")
    result = _run(tmp_path, text)
    assert (result.category, [fix["kind"] for fix in result.fixes][:1]) == ("rendezvous", ["fix_rendezvous"])


NO_OPERATOR = _tb([
    ('File "/work/tune/sft.py", line 97, in <module>', "trainer.train()"),
    ('File "/venv/lib/python3.11/site-packages/fastattn/ops/dispatch.py", line 76, in _pick', "raise NotImplementedError(msg)"),
], "NotImplementedError: No operator found for `efficient_attention_forward` with inputs:")


def test_an_operator_missing_after_the_extension_said_it_was_built_for_another_torch_is_versions(tmp_path):
    built_for = ("WARNING[FASTATTN]: fastattn can't load C++/CUDA extensions. fastattn was built for:\n"
                 "    PyTorch 2.5.0+cu124 with CUDA 1204 (you have 2.7.1+cu126)\n")
    result = _run(tmp_path, built_for + NO_OPERATOR)
    assert (result.category, result.root_cause.exception) == ("version_mismatch", "NotImplementedError")
    assert [fix["kind"] for fix in result.fixes][:1] == ["pin_versions"]
    # without that warning nothing says the install is at fault
    assert _run(tmp_path, NO_OPERATOR, name="bare.log").category != "version_mismatch"


def test_chat_turns_that_are_plain_strings_are_the_datas_format(tmp_path):
    text = _tb([
        ('File "/work/rm/prepare.py", line 30, in build', "tokenizer.apply_chat_template(pair['chosen'])"),
        ('File "<template>", line 4, in top-level template code', "{{ message.role }}"),
    ], "jinja2.exceptions.UndefinedError: 'str object' has no attribute 'role'")
    result = _run(tmp_path, text)
    assert (result.category, [fix["kind"] for fix in result.fixes][:1]) == ("data_schema", ["convert_data_format"])
    # a template that names a variable nobody passes is the template's own fault
    other = text.replace("'str object' has no attribute 'role'", "'add_generation_prompt_v2' is undefined")
    assert _run(tmp_path, other, name="template.log").category == "data_pipeline"


def test_a_refused_method_call_on_the_scripts_own_line_is_the_scripts(tmp_path):
    def refusal(code: str) -> str:
        return _tb([
            ('File "/work/qlora/run.py", line 71, in <module>', code),
            ('File "/venv/lib/python3.11/site-packages/transformers/modeling_utils.py", line 4128, in cuda',
             "raise ValueError("),
        ], "ValueError: Calling `cuda()` is not supported for `4-bit` quantized models. Please use the model as it "
           "is, since the model has already been set to the correct devices.")
    assert _run(tmp_path, refusal("model = model.cuda()")).category == "code_bug"
    # the library's own call (from_pretrained moving a model) leaves it a setting
    assert _run(tmp_path, refusal("model = load(args)"), name="lib.log").category == "config_invalid"


def test_an_assertions_own_words_about_a_file_header_say_the_file_is_bad(tmp_path):
    text = _tb([
        ('File "/work/lm-pretrain/data/indexed.py", line 414, in __init__', "self.index = IndexReader(path)"),
        ('File "/work/lm-pretrain/data/indexed.py", line 256, in __init__',
         'assert header == INDEX_HEADER, f"bad header, cannot read: {path}"'),
    ], "AssertionError: bad header, cannot read: /corpora/web/web_text_document.idx", lead="[rank0]: ")
    assert _run(tmp_path, text).category == "data_corrupt"


def test_every_label_masked_asks_for_the_response_marker_setting_first(tmp_path):
    text = _tb([('File "/work/tune/sft.py", line 88, in <module>', "trainer.train()")],
               "ValueError: TinyTune: All labels in your dataset are -100. Training losses will be all 0.")
    result = _run(tmp_path, text)
    assert (result.category, [fix["kind"] for fix in result.fixes][:1]) == ("data_pipeline", ["fix_config"])


def test_accelerates_own_port_check_is_a_port_in_use(tmp_path):
    text = _tb([('File "/venv/lib/python3.11/site-packages/accelerate/commands/launch.py", line 980, in launch',
                 "raise ConnectionError(")],
               "ConnectionError: Tried to launch distributed communication on port `29718`, but another process is "
               "utilizing it. Please specify a different port (such as using the `--main_process_port` flag or "
               "specifying a different `main_process_port` in your config file) and rerun your script.")
    result = _run(tmp_path, text)
    assert (result.category, result.facts.get("port")) == ("rendezvous", 29718)


def _hub_chain(joiner: str) -> str:
    inner = _tb([('File "/venv/lib/python3.11/site-packages/huggingface_hub/utils/_validators.py", line 154, '
                  'in validate_repo_id', "raise HFValidationError(")],
                "huggingface_hub.errors.HFValidationError: Repo id must be in the form 'repo_name' or "
                "'namespace/repo_name': '/shared/models/Qwen2.5-7B-Instuct'.", lead="[rank1]: ")
    outer = _tb([('File "/work/tune/sft.py", line 30, in <module>', "model = AutoModelForCausalLM.from_pretrained(p)"),
                 ('File "/venv/lib/python3.11/site-packages/transformers/utils/hub.py", line 469, in cached_files',
                  "raise OSError(")],
                "OSError: Incorrect path_or_model_id: '/shared/models/Qwen2.5-7B-Instuct'. Please provide either "
                "the path to a local folder or the repo_id of a model on the Hub.", lead="[rank1]: ")
    return inner + f"[rank1]: \n[rank1]: {joiner}\n[rank1]: \n" + outer


def test_a_loaders_own_error_raised_while_handling_a_hub_lookup_miss_is_the_root(tmp_path):
    result = _run(tmp_path, _hub_chain("During handling of the above exception, another exception occurred:"))
    assert (result.category, result.root_cause.exception) == ("model_load", "OSError")
    assert "while handling HFValidationError" in result.root_cause.message
    # raised `from` the miss, the chain keeps its origin
    caused = _run(tmp_path, _hub_chain("The above exception was the direct cause of the following exception:"),
                  name="cause.log")
    assert caused.root_cause.exception == "HFValidationError"


# ---- forms blind set 18 found (public threads of the most common failures) ----------------------------

def test_numpy_2_under_packages_built_for_1_is_versions_and_a_progress_label_is_no_exception(tmp_path):
    text = ("Map: 100%|##########| 48211/48211 [00:11<00:00, 4310.77 examples/s]\n"
            + _tb([('File "/venv/lib/python3.10/site-packages/transformers/trainer_pt_utils.py", line 180, '
                    'in nested_numpify', "return t.numpy()")], "RuntimeError: Numpy is not available"))
    result = _run(tmp_path, text)
    assert (result.category, result.root_cause.exception) == ("version_mismatch", "RuntimeError")


def test_a_gradient_norm_gone_nan_in_the_trainers_log_is_numerical(tmp_path):
    lines = "".join(f"{{'loss': 0.0, 'grad_norm': nan, 'learning_rate': 0.0002, 'epoch': {e / 100}}}\n"
                    for e in range(10, 14))
    result = _run(tmp_path, "{'loss': 1.84, 'grad_norm': 3.22, 'learning_rate': 0.00016, 'epoch': 0.08}\n" + lines)
    assert result.category == "numerical"
    # a finite norm is training going on
    assert _run(tmp_path, "{'loss': 1.84, 'grad_norm': 3.22}\n", name="fine.log").category == "unknown"


def test_a_notebook_kernel_dying_while_loading_is_host_memory(tmp_path):
    text = ("Loading checkpoint shards:  33%|###       | 1/3 [00:41<01:22, 41.12s/it]\n"
            "The Kernel crashed while executing code in the current cell or a previous cell.\n")
    assert _run(tmp_path, text).category == "host_oom"


def test_a_tokenizer_file_from_a_newer_tokenizers_release_is_the_models_load(tmp_path):
    text = _tb([('File "/venv/lib/python3.10/site-packages/transformers/tokenization_utils_fast.py", line 111, '
                 'in __init__', "fast_tokenizer = TokenizerFast.from_file(fast_tokenizer_file)")],
               "Exception: data did not match any variant of untagged enum ModelWrapper at line 757479 column 3")
    result = _run(tmp_path, text)
    assert (result.category, [fix["kind"] for fix in result.fixes][:1]) == ("model_load", ["pin_versions"])


def test_a_models_forward_refusing_the_trainers_labels_is_the_teams_model(tmp_path):
    text = _tb([('File "/venv/lib/python3.11/site-packages/torch/nn/modules/module.py", line 1747, in _call_impl',
                 "return forward_call(*args, **kwargs)")],
               "TypeError: PooledRegressor.forward() got an unexpected keyword argument 'labels'")
    assert _run(tmp_path, text).category == "code_bug"
    # a keyword a library release dropped stays a version change
    other = text.replace("PooledRegressor.forward()", "Trainer.__init__()").replace("'labels'", "'tokenizer'")
    assert _run(tmp_path, other, name="lib.log").category == "version_mismatch"


def test_a_type_missing_from_a_config_registry_is_the_config(tmp_path):
    text = _tb([('File "/venv/lib/python3.10/site-packages/mmengine/registry/build_functions.py", line 100, '
                 'in build_from_cfg', "raise KeyError(")],
               "KeyError: 'WeldSeamDataset is not in the mmdet::dataset registry. Please check whether the value of "
               "`WeldSeamDataset` is correct or it was registered as expected.'")
    assert _run(tmp_path, text).category == "config_invalid"


def test_a_stale_nfs_handle_asks_for_the_mount_first_not_space(tmp_path):
    text = _tb([('File "/work/seg/train.py", line 80, in resume', "state = torch.load(ckpt)")],
               "OSError: [Errno 116] Stale file handle")
    result = _run(tmp_path, text)
    assert (result.category, [fix["kind"] for fix in result.fixes][:1]) == ("storage", ["fix_path"])


def test_an_ipython_traceback_with_long_source_context_keeps_its_frames(tmp_path):
    context = "".join(f"   {n} x = step({n})\n" for n in range(2110, 2123))
    text = ("TypeError                                 Traceback (most recent call last)\n"
            "Cell In[14], line 12\n---> 12 trainer.train()\n\n"
            "File /venv/lib/python3.11/site-packages/transformers/trainer.py:2123, in Trainer.train(self)\n"
            + context + "-> 2123     return inner_training_loop(\n\n"
            "TypeError: PooledRegressor.forward() got an unexpected keyword argument 'labels'\n")
    result = _run(tmp_path, text)
    assert result.root_cause.exception == "TypeError"
    assert any("trainer.py" in str(frame.get("file", "")) for frame in result.root_cause.frames)


def test_a_cpp_exception_that_ended_the_process_names_its_class_when_python_knows_it(tmp_path):
    text = ("  2%|2         | 41/2210 [06:12<5:21:40,  8.89s/it]terminate called after throwing an instance of "
            "'c10::OutOfMemoryError'\n"
            "  what():  CUDA out of memory. Tried to allocate 1.96 GiB. GPU 3 has a total capacity of 79.33 GiB of "
            "which 1.12 GiB is free.\n")
    result = _run(tmp_path, text)
    assert (result.category, result.root_cause.exception) == ("gpu_oom", "OutOfMemoryError")
    assert "Tried to allocate 1.96 GiB" in result.root_cause.message
    # c10::Error names nothing a user could look up: no class is claimed
    generic = text.replace("c10::OutOfMemoryError", "c10::Error")
    assert _run(tmp_path, generic, name="generic.log").root_cause.exception is None


# ---- forms blind set 19 found -------------------------------------------------------------------------

def test_a_models_remote_code_failing_under_the_installed_transformers_is_versions(tmp_path):
    text = _tb([
        ('File "/work/ft/train.py", line 131, in train', "tokenizer = AutoTokenizer.from_pretrained(path, trust_remote_code=True)"),
        ('File "/venv/lib/python3.10/site-packages/transformers/tokenization_utils.py", line 367, in __init__',
         "self._add_tokens(...)"),
        ('File "/root/.cache/huggingface/modules/transformers_modules/Lark-7B/tokenization_lark.py", line 105, '
         "in vocab_size", "return self.sp_model.get_piece_size()"),
    ], "AttributeError: 'LarkTokenizer' object has no attribute 'sp_model'")
    result = _run(tmp_path, text)
    assert (result.category, [fix["kind"] for fix in result.fixes][:1]) == ("version_mismatch", ["pin_versions"])


def test_a_trainer_listing_the_columns_it_expected_is_the_datas_schema(tmp_path):
    text = _tb([('File "/venv/lib/python3.10/site-packages/fewshot/trainer.py", line 80, in _validate_column_mapping',
                 "raise ValueError(")],
               "ValueError: FewShot expected the dataset to have the columns ['label', 'text'], but only the columns "
               "['body', 'queue'] were found.")
    assert _run(tmp_path, text).category == "data_schema"


def test_an_audio_file_soundfile_cannot_decode_is_a_bad_data_file(tmp_path):
    text = _tb([('File "/venv/lib/python3.10/site-packages/soundfile.py", line 1216, in _open',
                 "raise LibsndfileError(err, prefix=...)")],
               "soundfile.LibsndfileError: Error opening '/corpora/calls/0713_0412.wav': Format not recognised.",
               lead="[rank2]: ")
    result = _run(tmp_path, text)
    assert (result.category, result.failing_rank) == ("data_corrupt", 2)


def test_a_preference_field_of_another_type_is_the_datas_schema(tmp_path):
    text = _tb([('File "/venv/lib/python3.11/site-packages/trl/trainer/dpo_trainer.py", line 640, in tokenize_row',
                 "raise ValueError(")],
               "ValueError: chosen should be an str but got <class 'list'>")
    result = _run(tmp_path, text)
    assert (result.category, [fix["kind"] for fix in result.fixes][:1]) == ("data_schema", ["convert_data_format"])


# ---- forms blind set 22 found (recent releases) -------------------------------------------------------

def test_the_error_torch_compiles_backend_raised_is_the_root_not_the_compilers_wrapper(tmp_path):
    text = ("[rank1]: Traceback (most recent call last):\n"
            '[rank1]:   File "/venv/lib/python3.11/site-packages/torch/_dynamo/output_graph.py", line 1446, '
            "in _call_user_compiler\n"
            "[rank1]:     raise BackendCompilerFailed(self.compiler_fn, e) from e\n"
            "[rank1]: torch._dynamo.exc.BackendCompilerFailed: backend='inductor' raised:\n"
            "[rank1]: RuntimeError: Found Tesla P100-PCIE-16GB which is too old to be supported by the triton GPU "
            "compiler, which is used as the backend. Triton only supports devices of CUDA Capability >= 7.0\n")
    result = _run(tmp_path, text)
    assert (result.category, result.root_cause.exception) == ("config_invalid", "RuntimeError")
    assert "too old to be supported by the triton" in result.root_cause.message


def test_a_plain_tensor_meeting_dtensors_is_the_sharding_plan(tmp_path):
    text = _tb([('File "/venv/lib/python3.11/site-packages/torch/distributed/tensor/_dispatch.py", line 490, '
                 "in _try_replicate_spec_for_scalar_tensor", "raise RuntimeError(")],
               "RuntimeError: aten.mm.default: got mixed torch.Tensor and DTensor, need to convert all "
               "torch.Tensor to DTensor before calling distributed operators!")
    assert _run(tmp_path, text).category == "config_invalid"


def test_a_reward_function_refusing_the_trainers_keywords_is_the_teams_function(tmp_path):
    text = _tb([('File "/venv/lib/python3.11/site-packages/trl/trainer/grpo_trainer.py", line 1132, '
                 "in _calculate_rewards", "output_reward_func = reward_func(prompts=prompts, completions=completions, "
                 "**reward_kwargs)")],
               "TypeError: exact_answer_reward() got an unexpected keyword argument 'solution'")
    assert _run(tmp_path, text).category == "code_bug"


def test_mapping_a_workers_batch_out_of_shared_memory_is_the_loaders_shm(tmp_path):
    text = _tb([('File "/venv/lib/python3.11/site-packages/torch/multiprocessing/reductions.py", line 541, '
                 "in rebuild_storage_filename", "storage = torch.UntypedStorage._new_shared_filename_cpu(manager, "
                 "handle, size)")],
               "RuntimeError: unable to mmap 25690112 bytes from file </torch_3371_2718093341_107>: Cannot allocate "
               "memory (12)", lead="[rank2]: ")
    result = _run(tmp_path, text)
    assert (result.category, [fix["kind"] for fix in result.fixes][:1]) == ("dataloader_worker", ["increase_shm"])


def test_numpys_binary_incompatibility_message_is_versions(tmp_path):
    text = _tb([('File "/venv/lib/python3.10/site-packages/sklearn/__init__.py", line 84, in <module>',
                 "from .utils._show_versions import show_versions")],
               "ValueError: numpy.dtype size changed, may indicate binary incompatibility. Expected 96 from C header, "
               "got 88 from PyObject")
    result = _run(tmp_path, text)
    assert (result.category, result.root_cause.exception) == ("version_mismatch", "ValueError")


def test_a_generation_server_the_trainer_cannot_reach_is_the_jobs_hosts_and_ports(tmp_path):
    text = ("[rank0]: Traceback (most recent call last):\n"
            '[rank0]:   File "/opt/env/lib/python3.12/site-packages/trl/extras/vllm_client.py", line 157, in '
            "check_server\n"
            "[rank0]:     raise ConnectionError(\n"
            "[rank0]: ConnectionError: The vLLM server can't be reached at 0.0.0.0:8000 after 240.0 seconds. Make "
            "sure the server is running by running `trl vllm-serve`.\n")
    result = _run(tmp_path, text)
    assert (result.category, result.fixes[0]["kind"]) == ("rendezvous", "fix_rendezvous")


def test_a_notebook_session_that_crashed_for_ram_is_host_memory(tmp_path):
    text = ("Unsloth: Merging 4bit and LoRA weights to 16bit...\n"
            "Your session crashed after using all available RAM. If you are interested in access to high-RAM "
            "runtimes, you may want to check out Colab Pro.\n")
    assert _run(tmp_path, text).category == "host_oom"


def test_a_platform_call_after_vllm_found_no_platform_is_its_build(tmp_path):
    platform = _tb([
        ('File "/work/rl/grpo.py", line 61, in <module>', "trainer = GRPOTrainer(model=policy, args=cfg)"),
        ('File "/venv/lib/python3.11/site-packages/vllm/config.py", line 702, in verify_async_output_proc',
         "if not current_platform.is_async_output_supported(self.enforce_eager):"),
        ('File "/venv/lib/python3.11/site-packages/vllm/platforms/interface.py", line 201, in is_async_output_supported',
         "raise NotImplementedError"),
    ], "NotImplementedError", lead="[rank1]: ")
    note = "INFO 07-19 11:02:03 __init__.py:190] No platform detected, vLLM is running on UnspecifiedPlatform\n"
    result = _run(tmp_path, note + platform)
    assert result.category == "version_mismatch"
    assert [fix["kind"] for fix in result.fixes][:1] == ["pin_versions"]
    assert _run(tmp_path, platform, name="bare.log").category != "version_mismatch"
