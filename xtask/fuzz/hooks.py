"""Schemathesis hooks for `cargo xtask test`'s fuzz run (loaded with SCHEMATHESIS_HOOKS).

One refusal of valid-by-schema input is the protocol's own and depends on state no schema
can state: shared/protocol.md has `answerChangeQuestion` refuse a `chosenOption` that is
not an option of the item's open question with 400 naming `chosenOption`. This check is
schemathesis's `positive_data_acceptance` with that one answer allowed; the built-in
check is excluded from the run in its favour. Every other refusal still fails it.
"""

import schemathesis
from schemathesis.specs.openapi.checks import positive_data_acceptance

STATED_REFUSALS = {
    ("POST /rpc/answerChangeQuestion", 400, "chosenOption: is not an option of the open question"),
}


@schemathesis.check
def positive_data_acceptance_but_protocol_refusals(ctx, response, case):
    """Valid data is accepted, but for the refusals shared/protocol.md itself makes."""
    if response.status_code == 400:
        try:
            message = response.json().get("message", "")
        except ValueError:
            message = ""
        if (case.operation.label, 400, message) in STATED_REFUSALS:
            return True
    return positive_data_acceptance(ctx, response, case)
