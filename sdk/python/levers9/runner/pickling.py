"""Pickling in the container: the standard library's pickle, and cloudpickle
only for what pickle cannot do.

cloudpickle is imported when first needed rather than at the runner's start:
with the modules it pulls in, it was about a fifth of the runner's imports,
which a cold call waits for.

`loads` is pickle's (cloudpickle's own `loads` is that same function); a
payload that needs cloudpickle's helpers names them, so unpickling it
imports cloudpickle then.

`dumps` tries pickle first. What pickle can pickle here it pickles as
cloudpickle would, by reference: no user object lives in the runner's
`__main__`, and no module is registered to be pickled by value. Lambdas,
nested functions and classes made at run time make pickle raise, and
cloudpickle pickles those by value.
"""

from __future__ import annotations

import pickle

loads = pickle.loads


def dumps(value) -> bytes:
    """`value` pickled; raises whatever cloudpickle raises for what neither can pickle."""
    try:
        return pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)
    except Exception:  # pickling raises anything: PicklingError, TypeError, AttributeError, ...
        import cloudpickle

        return cloudpickle.dumps(value)
