"""The one error the server's operations raise for a request they refuse; the app answers it
with its status and `{"detail": message}`."""


class Refused(Exception):
    def __init__(self, status: int, detail: str):
        super().__init__(detail)
        self.status, self.detail = status, detail
