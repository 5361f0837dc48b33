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

    def to(self, dtype: Any) -> TorchArray:
        return self.astype(dtype) if isinstance(dtype, (np.dtype, type)) else self

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


def as_array(value: Any, dtype: Any = None) -> TorchArray:
    """torch.tensor(value, dtype=...): a Python float becomes float32 and an int int64, as in torch."""
    if dtype is None and isinstance(value, float):
        dtype = np.float32
    return np.asarray(value, dtype=dtype).view(TorchArray)


def _over(name: str) -> Any:
    """torch.<name>(x, ...) as x.<name>(...)."""

    def call(value: Any, *args: Any, **kwargs: Any) -> Any:
        return getattr(as_array(value), name)(*args, **kwargs)

    call.__name__ = name
    return call


_DTYPES = {
    "float16": np.float16,
    "half": np.float16,
    "float32": np.float32,
    "float": np.float32,
    "float64": np.float64,
    "double": np.float64,
    "int8": np.int8,
    "int16": np.int16,
    "int32": np.int32,
    "int": np.int32,
    "int64": np.int64,
    "long": np.int64,
    "uint8": np.uint8,
    "bool": np.bool_,
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
    **{name: np.dtype(dtype) for name, dtype in _DTYPES.items()},
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
