package message

import "errors"

// Decoding errors. Callers tell a record that is merely incomplete (more
// bytes may still arrive, e.g. the tail of a log being written) from one that
// is broken.
var (
	// ErrCorrupt: the bytes are not a valid record (bad magic, impossible
	// lengths, CRC mismatch). Wrapped with details.
	ErrCorrupt = errors.New("message: corrupt record")
	// ErrTruncated: the header is plausible but the buffer ends before
	// totalSize bytes.
	ErrTruncated = errors.New("message: truncated record")
	// ErrBlank: a BLANK record (end-of-file filler) where a message was
	// expected.
	ErrBlank = errors.New("message: blank record")
)
