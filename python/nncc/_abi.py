"""ctypes mirror of nncc_model.h (ABI 7): the table every generated
lib<model>.so returns from nncc_model_get_abi()."""
import ctypes as C

ABI_VERSION = 10

STATUS_NAMES = {
    0: "OK", 1: "INVALID_ARGUMENT", 2: "SHAPE_MISMATCH", 3: "DTYPE_MISMATCH", 4: "NOT_FOUND",
    5: "CORRUPT_FILE", 6: "IO", 7: "OUT_OF_MEMORY", 8: "UNSUPPORTED", 9: "CUDA_UNAVAILABLE",
    10: "CUDA", 11: "INTERNAL",
}

# nncc_dtype codes and numpy type names ("bfloat16", which numpy lacks, is
# torch's name: a --precision bf16 library's float tensors).
DTYPES = {1: "float64", 2: "float32", 3: "float16", 4: "bfloat16", 5: "int64", 6: "int32",
          7: "int16", 8: "int8", 9: "uint8", 10: "bool"}
DTYPE_CODES = {v: k for k, v in DTYPES.items()}

BIND_INPUT, BIND_OUTPUT, BIND_PARAM, BIND_GRAD, BIND_COTANGENT = range(5)
TARGET_CPU, TARGET_CUDA = 0, 1


class Error_(C.Structure):
    _fields_ = [("status", C.c_int), ("message", C.c_char * 1024)]


class TensorInfo(C.Structure):
    _fields_ = [("name", C.c_char_p), ("dtype", C.c_int), ("rank", C.c_int32),
                ("dims", C.POINTER(C.c_int64))]


class TrainConfig(C.Structure):
    _fields_ = [("optimizer", C.c_int32), ("lr", C.c_double), ("beta1", C.c_double),
                ("beta2", C.c_double), ("eps", C.c_double), ("weight_decay", C.c_double),
                ("momentum", C.c_double), ("nesterov", C.c_int32), ("clip", C.c_double),
                ("layer_decay", C.c_double), ("schedule", C.c_int32), ("warmup", C.c_int64),
                ("warmup_fraction", C.c_double), ("total", C.c_int64), ("cycles", C.c_double),
                ("step_size", C.c_int64), ("gamma", C.c_double), ("epochs", C.c_int64),
                ("batch", C.c_int64), ("seed", C.c_int64)]

    def copy(self):
        c = TrainConfig()
        C.pointer(c)[0] = self
        return c


class ParamGroup(C.Structure):
    _fields_ = [("decay", C.c_int32), ("lr_depth", C.c_int32)]


class TrainStats(C.Structure):
    _fields_ = [("step", C.c_int64), ("lr", C.c_double), ("grad_norm", C.c_double),
                ("clip_scale", C.c_double)]


PErr = C.POINTER(Error_)
ModelFn = C.CFUNCTYPE(C.c_int, C.c_void_p, PErr)
SetTensorFn = C.CFUNCTYPE(C.c_int, C.c_void_p, C.c_char_p, C.c_int, C.c_int32,
                          C.POINTER(C.c_int64), C.c_void_p, PErr)


class ABI(C.Structure):
    _fields_ = [
        ("abi_version", C.c_uint32), ("model_name", C.c_char_p), ("precision", C.c_char_p),
        ("num_dims", C.c_int32), ("dim_names", C.POINTER(C.c_char_p)),
        ("num_inputs", C.c_int32), ("inputs", C.POINTER(TensorInfo)),
        ("num_outputs", C.c_int32), ("outputs", C.POINTER(TensorInfo)),
        ("num_params", C.c_int32), ("params", C.POINTER(TensorInfo)),
        ("create", C.CFUNCTYPE(C.c_int, C.c_int, C.POINTER(C.c_void_p), PErr)),
        ("destroy", C.CFUNCTYPE(None, C.c_void_p)),
        ("load_weights", C.CFUNCTYPE(C.c_int, C.c_void_p, C.c_char_p, PErr)),
        ("init_weights", C.CFUNCTYPE(C.c_int, C.c_void_p, C.c_uint64, PErr)),
        ("save_weights", C.CFUNCTYPE(C.c_int, C.c_void_p, C.c_char_p, PErr)),
        ("set_input", SetTensorFn),
        ("forward", ModelFn),
        ("get_output", C.CFUNCTYPE(C.c_int, C.c_void_p, C.c_char_p, C.POINTER(C.c_int),
                                   C.POINTER(C.c_int32), C.POINTER(C.POINTER(C.c_int64)),
                                   C.POINTER(C.c_void_p), PErr)),
        ("memory_stats", C.CFUNCTYPE(C.c_int, C.c_void_p, C.POINTER(C.c_uint64),
                                     C.POINTER(C.c_uint64), PErr)),
        ("forward_train", ModelFn), ("backward", ModelFn),
        ("forward_backward", ModelFn),
        ("num_grads", C.c_int32), ("grads", C.POINTER(TensorInfo)),
        ("train_step", C.CFUNCTYPE(C.c_int, C.c_void_p, C.c_void_p, PErr)),
        ("train_config", C.POINTER(TrainConfig)),
        ("train_stats", C.CFUNCTYPE(C.c_int, C.c_void_p, C.POINTER(TrainStats), PErr)),
        ("reset_optimizer", ModelFn),
        ("schedule_lr", C.CFUNCTYPE(C.c_double, C.POINTER(TrainConfig), C.c_int64)),
        ("param_group", C.CFUNCTYPE(C.c_int, C.c_void_p, C.c_int32, C.POINTER(TrainConfig),
                                    C.POINTER(C.c_int32), C.POINTER(C.c_double), PErr)),
        ("param_groups", C.POINTER(ParamGroup)),
        ("num_cotangents", C.c_int32), ("cotangents", C.POINTER(TensorInfo)),
        ("num_input_grads", C.c_int32), ("input_grads", C.POINTER(TensorInfo)),
        ("set_cotangent", SetTensorFn),
        ("bind", C.CFUNCTYPE(C.c_int, C.c_void_p, C.c_int32, C.c_char_p, C.c_int, C.c_int32,
                             C.POINTER(C.c_int64), C.c_void_p, PErr)),
        ("set_step", C.CFUNCTYPE(C.c_int, C.c_void_p, C.c_int64, PErr)),
        ("set_cuda_stream", C.CFUNCTYPE(C.c_int, C.c_void_p, C.c_void_p, PErr)),
        ("save_train_state", C.CFUNCTYPE(C.c_int, C.c_void_p, C.c_char_p, PErr)),
        ("load_train_state", C.CFUNCTYPE(C.c_int, C.c_void_p, C.c_char_p, PErr)),
        # ABI 8: gradient accumulation
        ("accumulate_gradients", C.CFUNCTYPE(C.c_int, C.c_void_p, C.c_double, PErr)),
        ("apply_gradients", C.CFUNCTYPE(C.c_int, C.c_void_p, C.c_void_p, PErr)),
        # ABI 9: per input, 1 when forward needs it, 0 when only the loss reads it
        ("inference_inputs", C.POINTER(C.c_int32)),
        # ABI 9: sample offset (the run seed; the first sample's batch row)
        ("set_seed", C.CFUNCTYPE(C.c_int, C.c_void_p, C.c_uint64, PErr)),
        ("set_sample_offset", C.CFUNCTYPE(C.c_int, C.c_void_p, C.c_int64, PErr)),
        # ABI 10: frozen parameters (set_frozen(name, 0|1), get_frozen(name, &flag))
        ("set_frozen", C.CFUNCTYPE(C.c_int, C.c_void_p, C.c_char_p, C.c_int32, PErr)),
        ("get_frozen", C.CFUNCTYPE(C.c_int, C.c_void_p, C.c_char_p, C.POINTER(C.c_int32),
                                   PErr)),
    ]
