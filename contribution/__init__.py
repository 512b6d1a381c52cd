"""The contribution, the one record institutions send and the server reads, and the protocol
around it, imported by both sides: `records` (the sentence record and its codec), `sealing`
(the chunked AEAD stream), `container` (the sealed, signed `.dpc` file, its header and its
media type), `validation` (the server's check of a contribution's content, shared by uploads
and pooled training), `signed_requests` (the Ed25519-signed institution requests and their
headers) and `identity` (the institution id rule)."""
