"""The contribution, the one record institutions send and the server reads, imported by both
sides: `records` (the sentence record and its codec), `sealing` (the chunked AEAD stream),
`container` (the sealed, signed `.dpc` file and its header) and `validation` (the server's
check of a contribution's content, shared by uploads and pooled training)."""
