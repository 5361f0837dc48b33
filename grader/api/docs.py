"""GET /docs (Swagger UI) and GET /redoc (ReDoc): the API's documentation from files served here
(grader/web/static/vendor/, pinned versions in its VERSIONS file), never from a CDN, so it works on a
machine without internet. Neither page has an inline script."""

from __future__ import annotations

from fastapi import APIRouter
from fastapi.responses import HTMLResponse

docs_router = APIRouter(include_in_schema=False)

VENDOR = "/static/vendor"
SWAGGER_PAGE = f"""<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>torchjudge API</title>
<link rel="icon" href="/static/favicon.svg" type="image/svg+xml">
<link rel="stylesheet" href="{VENDOR}/swagger-ui/swagger-ui.css">
</head>
<body>
<div id="swagger-ui" data-openapi-url="/openapi.json"></div>
<script src="{VENDOR}/swagger-ui/swagger-ui-bundle.js"></script>
<script src="/static/docs.js"></script>
</body>
</html>
"""
REDOC_PAGE = f"""<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>torchjudge API</title>
<link rel="icon" href="/static/favicon.svg" type="image/svg+xml">
</head>
<body>
<redoc spec-url="/openapi.json"></redoc>
<script src="{VENDOR}/redoc/redoc.standalone.js"></script>
</body>
</html>
"""
# The pages' own scripts come from this origin only; Swagger UI and ReDoc style with inline styles, ReDoc
# searches in a worker it makes from a blob, and both show images given as data: URLs.
POLICY = (
    "default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; "
    "font-src 'self' data:; connect-src 'self'; worker-src 'self' blob:; frame-ancestors 'none'; base-uri 'none'"
)
HEADERS = {"Content-Security-Policy": POLICY, "X-Content-Type-Options": "nosniff", "Cache-Control": "no-cache"}


@docs_router.get("/docs")
def swagger_ui() -> HTMLResponse:
    return HTMLResponse(SWAGGER_PAGE, headers=HEADERS)


@docs_router.get("/redoc")
def redoc() -> HTMLResponse:
    return HTMLResponse(REDOC_PAGE, headers=HEADERS)
