"""What an `expect:` or `holds:` expression sees, on the trusted side, which never imports torch: each
returned tensor as a NumPy array that answers the common torch methods (`.double()`, `.mean(dim=...)`,
`.item()`, `.numel()`, ...), and small `torch`, `np` and `math` namespaces of functions whose work is
bounded by the size of their inputs (nothing that allocates from a number: no `zeros(n)`, no
`arange(n)`, no `factorial`).
"""

from __future__ import annotations

import math as _math
from collections import namedtuple
from types import SimpleNamespace
from typing import Any

import numpy as np

from grader.containers.values import COMPLEX_DTYPES, DTYPES, FLOAT_DTYPES, wire_name

MinMax = namedtuple("MinMax", ["values", "indices"])


def _plain(array: np.ndarray) -> np.ndarray:
    return array.view(np.ndarray)


def _wrap(result: Any) -> Any:
    """A reduction's result as torch gives it: an array (0-d for a full reduction), never a NumPy scalar."""
    if isinstance(result, np.ndarray):
        return result.view(TorchArray)
    if isinstance(result, np.generic):
        return np.asarray(result).view(TorchArray)
    return result


def _axis(dim: Any, axis: Any) -> Any:
    chosen = axis if dim is None else dim
    return tuple(chosen) if isinstance(chosen, list) else chosen


class TorchArray(np.ndarray):
    """A NumPy array with torch's names for the methods an expression most often calls. Torch's defaults
    where they differ from NumPy's: std and var are unbiased; max and min over a dim give (values, indices)."""

    def double(self) -> TorchArray:
        return self.astype(np.float64)

    def float(self) -> TorchArray:
        return self.astype(np.float32)

    def half(self) -> TorchArray:
        return self.astype(np.float16)

    def long(self) -> TorchArray:
        return self.astype(np.int64)

    def int(self) -> TorchArray:
        return self.astype(np.int32)

    def bool(self) -> TorchArray:
        return self.astype(np.bool_)

    def bfloat16(self) -> TorchArray:
        return _cast(self, DTYPES["bfloat16"])

    def to(self, *args: Any, dtype: Any = None, **kwargs: Any) -> TorchArray:
        """x.to(dtype), x.to("cpu", dtype), x.to(other) (other's dtype), x.to(dtype=...); a device changes
        nothing here (everything is on the CPU)."""
        for arg in args:
            if isinstance(arg, np.ndarray):
                dtype = arg.dtype
            elif not isinstance(arg, str):
                dtype = arg
        return self if dtype is None else _cast(self, tensor_dtype(dtype))

    def is_floating_point(self) -> bool:
        return wire_name(self.dtype) in FLOAT_DTYPES - COMPLEX_DTYPES

    def is_complex(self) -> bool:
        return wire_name(self.dtype) in COMPLEX_DTYPES

    def numel(self) -> int:
        return int(_plain(self).size)

    def dim(self) -> int:
        return int(self.ndim)

    def detach(self) -> TorchArray:
        return self

    cpu = clone = contiguous = detach

    def numpy(self) -> np.ndarray:
        return _plain(self)

    def abs(self) -> TorchArray:
        return np.abs(self)

    def sqrt(self) -> TorchArray:
        return np.sqrt(self)

    def exp(self) -> TorchArray:
        return np.exp(self)

    def log(self) -> TorchArray:
        return np.log(self)

    def isnan(self) -> TorchArray:
        return np.isnan(self)

    def isfinite(self) -> TorchArray:
        return np.isfinite(self)

    def _reduce(self, name: str, dim: Any, axis: Any, keepdim: bool, **kwargs: Any) -> Any:
        method = getattr(np.ndarray, name)
        return _wrap(method(_plain(self), axis=_axis(dim, axis), keepdims=keepdim, **kwargs))

    def sum(self, dim: Any = None, keepdim: bool = False, *, axis: Any = None, **kwargs: Any) -> Any:  # type: ignore[override]
        return self._reduce("sum", dim, axis, keepdim or bool(kwargs.pop("keepdims", False)), **kwargs)

    def mean(self, dim: Any = None, keepdim: bool = False, *, axis: Any = None, **kwargs: Any) -> Any:  # type: ignore[override]
        return self._reduce("mean", dim, axis, keepdim or bool(kwargs.pop("keepdims", False)), **kwargs)

    def all(self, dim: Any = None, keepdim: bool = False, *, axis: Any = None, **kwargs: Any) -> Any:  # type: ignore[override]
        return self._reduce("all", dim, axis, keepdim or bool(kwargs.pop("keepdims", False)), **kwargs)

    def any(self, dim: Any = None, keepdim: bool = False, *, axis: Any = None, **kwargs: Any) -> Any:  # type: ignore[override]
        return self._reduce("any", dim, axis, keepdim or bool(kwargs.pop("keepdims", False)), **kwargs)

    def std(self, dim: Any = None, unbiased: bool = True, keepdim: bool = False, **kwargs: Any) -> Any:  # type: ignore[override]
        ddof = kwargs.pop("ddof", kwargs.pop("correction", 1 if unbiased else 0))
        return self._reduce("std", dim, kwargs.pop("axis", None), keepdim, ddof=ddof, **kwargs)

    def var(self, dim: Any = None, unbiased: bool = True, keepdim: bool = False, **kwargs: Any) -> Any:  # type: ignore[override]
        ddof = kwargs.pop("ddof", kwargs.pop("correction", 1 if unbiased else 0))
        return self._reduce("var", dim, kwargs.pop("axis", None), keepdim, ddof=ddof, **kwargs)

    def _extreme(self, name: str, dim: Any, keepdim: bool, kwargs: dict) -> Any:
        if dim is None or kwargs:
            return self._reduce(name, dim, kwargs.pop("axis", None), keepdim, **kwargs)
        values = getattr(np.ndarray, name)(_plain(self), axis=dim, keepdims=keepdim)
        arg = np.argmax if name == "max" else np.argmin
        indices = arg(_plain(self), axis=dim, keepdims=keepdim)
        return MinMax(_wrap(values), _wrap(indices))

    def max(self, dim: Any = None, keepdim: bool = False, **kwargs: Any) -> Any:  # type: ignore[override]
        return self._extreme("max", dim, keepdim, kwargs)

    def min(self, dim: Any = None, keepdim: bool = False, **kwargs: Any) -> Any:  # type: ignore[override]
        return self._extreme("min", dim, keepdim, kwargs)

    def argmax(self, dim: Any = None, keepdim: bool = False, **kwargs: Any) -> Any:  # type: ignore[override]
        return _wrap(np.argmax(_plain(self), axis=_axis(dim, kwargs.get("axis")), keepdims=keepdim))

    def argmin(self, dim: Any = None, keepdim: bool = False, **kwargs: Any) -> Any:  # type: ignore[override]
        return _wrap(np.argmin(_plain(self), axis=_axis(dim, kwargs.get("axis")), keepdims=keepdim))


def _cast(array: np.ndarray, dtype: np.dtype) -> Any:
    """array.astype(dtype), also between two of ml_dtypes' types that have no cast to each other (fp8 to
    float8_e8m0fnu): through float32, which holds every value of bfloat16 and fp8 exactly."""
    try:
        return array.astype(dtype)
    except TypeError:
        return array.astype(np.float32).astype(dtype)


def tensor_dtype(dtype: Any) -> np.dtype:
    """The dtype a tensor may have that `dtype` names (torch.bfloat16, np.float32, float, ...); TypeError for
    anything else (a string, a structured or text dtype), so that no conversion makes what no tensor is."""
    if isinstance(dtype, np.dtype) or (
        isinstance(dtype, type) and (dtype in (bool, int, float, complex) or issubclass(dtype, np.generic))
    ):
        name = wire_name(np.dtype(dtype))
        if name is not None:
            return DTYPES[name]
    raise TypeError(f"not a dtype a tensor can have: {str(dtype)[:60]}")


def as_array(value: Any, dtype: Any = None) -> TorchArray:
    """torch.tensor(value, dtype=...): a Python float becomes float32 and an int int64, as in torch."""
    if dtype is None and isinstance(value, float):
        dtype = np.float32
    return np.asarray(value, dtype=None if dtype is None else tensor_dtype(dtype)).view(TorchArray)


def _over(name: str) -> Any:
    """torch.<name>(x, ...) as x.<name>(...)."""

    def call(value: Any, *args: Any, **kwargs: Any) -> Any:
        return getattr(as_array(value), name)(*args, **kwargs)

    call.__name__ = name
    return call


# torch's names for its dtypes: every wire dtype by its own name, and torch's aliases.
_DTYPES = {
    **DTYPES,
    "half": DTYPES["float16"],
    "float": DTYPES["float32"],
    "double": DTYPES["float64"],
    "cfloat": DTYPES["complex64"],
    "cdouble": DTYPES["complex128"],
    "short": DTYPES["int16"],
    "int": DTYPES["int32"],
    "long": DTYPES["int64"],
}

TORCH = SimpleNamespace(
    tensor=as_array,
    as_tensor=as_array,
    allclose=lambda a, b, rtol=1e-5, atol=1e-8, equal_nan=False: bool(np.allclose(a, b, rtol, atol, equal_nan)),
    isclose=lambda a, b, rtol=1e-5, atol=1e-8, equal_nan=False: _wrap(np.isclose(a, b, rtol, atol, equal_nan)),
    equal=lambda a, b: bool(np.shape(a) == np.shape(b) and np.array_equal(a, b)),
    where=lambda c, a, b: _wrap(np.where(c, a, b)),
    matmul=lambda a, b: _wrap(np.matmul(a, b)),
    **{name: _over(name) for name in ("abs", "sqrt", "exp", "log", "isnan", "isfinite", "sum", "mean", "std")},
    **{name: _over(name) for name in ("var", "max", "min", "argmax", "argmin", "all", "any", "numel")},
    isinf=lambda a: _wrap(np.isinf(a)),
    pi=_math.pi,
    e=_math.e,
    inf=_math.inf,
    nan=_math.nan,
    **_DTYPES,
)

NP = SimpleNamespace(
    **{
        name: getattr(np, name)
        for name in (
            "abs", "sqrt", "exp", "log", "log2", "log10", "mean", "std", "var", "sum", "prod", "min", "max",
            "all", "any", "allclose", "isclose", "isfinite", "isnan", "isinf", "array_equal", "where", "sort",
            "unique", "round", "cumsum", "diff", "argmax", "argmin", "count_nonzero", "asarray", "array",
            "median", "percentile", "quantile", "clip", "maximum", "minimum", "float16", "float32", "float64",
            "int32", "int64", "bool_", "pi", "e", "inf", "nan", "matmul", "dot", "corrcoef",
        )
    },
    linalg=SimpleNamespace(norm=np.linalg.norm),
)  # fmt: skip

MATH = SimpleNamespace(
    **{
        name: getattr(_math, name)
        for name in (
            "sqrt", "exp", "log", "log2", "log10", "log1p", "expm1", "isclose", "isfinite", "isnan", "isinf",
            "fabs", "floor", "ceil", "pi", "e", "inf", "nan", "tau", "erf", "erfc", "tanh", "sin", "cos", "tan",
            "atan", "atan2", "pow", "fsum", "hypot", "lgamma", "gamma", "copysign", "trunc",
        )
    }
)  # fmt: skip
