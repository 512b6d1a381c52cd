"""The one error the server's operations raise for a request they refuse; the app answers it
with its status and `{"detail": message}` (`RefusalBody`, the model of that answer in OpenAPI)."""

from pydantic import BaseModel, Field


class Refused(Exception):
    def __init__(self, status: int, detail: str):
        super().__init__(detail)
        self.status, self.detail = status, detail


class RefusalBody(BaseModel):
    detail: str = Field(description="Why the request was refused.")
