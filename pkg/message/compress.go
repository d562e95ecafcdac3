package message

import (
	"bytes"
	"compress/zlib"
	"errors"
	"fmt"
	"io"
)

// ErrUnsupportedCompression reports LZ4 or ZSTD bodies: only zlib is in the
// standard library, and client-go only ever sends zlib.
var ErrUnsupportedCompression = errors.New("message: unsupported compression type")

// CompressBodyThreshold is the body size from which both clients compress
// (docs/protocol.md §5.9).
const CompressBodyThreshold = 4096

// Decompress returns the body of a record with the given sysFlag, inflated
// when FlagCompressed is set. maxSize bounds the result (0: no bound) so a
// hostile body cannot exhaust memory.
func Decompress(body []byte, sysFlag int32, maxSize int) ([]byte, error) {
	if sysFlag&FlagCompressed == 0 {
		return body, nil
	}
	switch CompressionType(sysFlag) {
	case CompressionZLIB, CompressionZLIBDefault:
	default:
		return nil, fmt.Errorf("%w: %#x", ErrUnsupportedCompression, CompressionType(sysFlag))
	}
	r, err := zlib.NewReader(bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("message: zlib body: %w", err)
	}
	defer r.Close()
	var src io.Reader = r
	if maxSize > 0 {
		src = io.LimitReader(r, int64(maxSize)+1)
	}
	out, err := io.ReadAll(src)
	if err != nil {
		return nil, fmt.Errorf("message: zlib body: %w", err)
	}
	if maxSize > 0 && len(out) > maxSize {
		return nil, fmt.Errorf("%w: inflated body exceeds %d bytes", ErrTooLarge, maxSize)
	}
	return out, nil
}

// Compress deflates body with zlib at level 5 (what both clients use) and
// returns it with the sysFlag bits to set (compressed, ZLIB type).
func Compress(body []byte) ([]byte, int32, error) {
	var buf bytes.Buffer
	w, err := zlib.NewWriterLevel(&buf, 5)
	if err != nil {
		return nil, 0, err
	}
	if _, err := w.Write(body); err != nil {
		return nil, 0, err
	}
	if err := w.Close(); err != nil {
		return nil, 0, err
	}
	return buf.Bytes(), FlagCompressed | CompressionZLIB, nil
}
