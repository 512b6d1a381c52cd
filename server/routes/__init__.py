"""The HTTP API's routes (docs/server.md, HTTP API), one module per resource; `ROUTERS` are the
routers `create_app` includes. Admin routes are on the modules' `admin` routers, which require
the admin token (routers.py)."""

from deidpool.server.routes import (
                           audits,
                           contributions,
                           dashboard,
                           institutions,
                           metrics,
                           pipelines,
                           representers,
                           runs,
                           service,
)

ROUTERS = (service.router, institutions.admin, representers.admin, representers.router, contributions.router,
           contributions.admin,
           runs.admin, audits.admin, audits.router, pipelines.router, dashboard.router, metrics.router)
