"""The institution's side: export of shareable vectors, encryption, upload, and
de-identification of unlabeled notes with a published pipeline."""
