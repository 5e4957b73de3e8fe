"""What the Python tests share: running a file under pytest (py_test's main),
a rule that records its calls, and small Tensor makers."""

import sys

import pytest

import strata
from strata import dtype as sd


def run(path):
    """pytest on one file, quiet, without a cache in the source tree."""
    sys.exit(pytest.main([path, "-q", "-p", "no:cacheprovider"]))


class RecordingRule:
    """A representation rule that records each context it receives (in a
    log shared with other rules, to see their order), and raises `error` or
    returns `result` when given."""

    def __init__(self, log, name, error=None, result=None):
        self.log = log
        self.name = name
        self.error = error
        self.result = result
        self.contexts = []

    def validate(self, context):
        self.log.append(self.name)
        self.contexts.append(context)
        if self.error is not None:
            raise self.error
        return self.result


def layout(text):
    return strata.Layout.parse(text)


def pair_dtype(rules=()):
    """A compound dtype (float32 values, int8 per-row codes): level 0 (4,8),
    level 1 one value per row."""
    return sd.CompoundDType("values_with_row_codes", (sd.float32, sd.int8),
                            rules=rules)


def pair_levels(values=None, codes=None, values_offset=0):
    """Valid subtensors and adjacent layouts for pair_dtype()."""
    values = values or strata.HostCarrier(sd.float32, 32)
    codes = codes or strata.HostCarrier(sd.int8, 4)
    return ([(sd.float32, values, values_offset, layout("(4,8):(8,1)")),
             (sd.int8, codes, 0, layout("4:1"))],
            [layout("(4,8):(1,0)")])


def state(carrier):
    """What a failure must leave unchanged of a carrier."""
    return (carrier.version(), carrier.released(), carrier.size())


def readme_python_block():
    """The first ```python block after README.md's "## Python" heading."""
    with open("README.md") as f:
        text = f.read()
    section = text[text.index("\n## Python\n"):]
    start = section.index("```python\n") + len("```python\n")
    return section[start:section.index("```", start)]
