"""Hostile submissions against the real pipeline: every attack contained, nothing leaked, grading goes on.

Every module here carries `pytestmark = pytest.mark.docker`; the suite runs once per sandbox runtime
registered with the engine (runc always, runsc when scripts/ensure-runsc.sh registered it).
"""
