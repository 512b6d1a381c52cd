"""The one error the server's operations raise for a request they refuse; the app answers it
with its status, `headers` and `{"detail": message}` (`RefusalBody`, the model of that answer
in OpenAPI)."""

from pydantic import BaseModel, Field


class Refused(Exception):
    def __init__(self, status: int, detail: str, headers: dict[str, str] | None = None):
        super().__init__(detail)
        self.status, self.detail, self.headers = status, detail, headers


class RefusalBody(BaseModel):
    detail: str = Field(description="Why the request was refused.")
