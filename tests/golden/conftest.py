"""Golden tests: let pytest explain failed assertions inside the shared checks."""

import pytest

pytest.register_assert_rewrite(f"{__package__}.expect")
