package message

import (
	"bytes"
	"compress/zlib"
	"errors"
	"fmt"
	"io"

	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
)

// ErrUnsupportedCompression reports a compression type no RocketMQ client
// writes (sysFlag bits 8–10 other than ZLIB, LZ4 and ZSTD).
var ErrUnsupportedCompression = errors.New("message: unsupported compression type")

// zstdMaxWindow bounds a ZSTD frame's window (zstd's own limit without
// --long=31; Java's level 5 uses 2 MiB).
const zstdMaxWindow = 128 << 20

// CompressBodyThreshold is the body size from which both clients compress
// (docs/protocol.md §5.9).
const CompressBodyThreshold = 4096

// Decompress returns the body of a record with the given sysFlag, inflated
// when FlagCompressed is set: zlib (client-go, Java's default), or the LZ4
// frame and ZSTD frame that Java 5.x producers write with
// rocketmq.message.compressType (Apache's Lz4Compressor, ZstdCompressor).
// maxSize bounds the result (0: no bound) so a hostile body cannot exhaust
// memory.
func Decompress(body []byte, sysFlag int32, maxSize int) ([]byte, error) {
	if sysFlag&FlagCompressed == 0 {
		return body, nil
	}
	var (
		src  io.Reader
		name string
	)
	switch CompressionType(sysFlag) {
	case CompressionZLIB, CompressionZLIBDefault:
		r, err := zlib.NewReader(bytes.NewReader(body))
		if err != nil {
			return nil, fmt.Errorf("message: zlib body: %w", err)
		}
		defer r.Close()
		src, name = r, "zlib"
	case CompressionLZ4:
		src, name = lz4.NewReader(bytes.NewReader(body)), "lz4"
	case CompressionZSTD:
		// The frame's window (2 MiB at Java's default level) is not the
		// body's size: the output is bounded below, and low-memory mode
		// grows the history only as the body is read.
		d, err := zstd.NewReader(bytes.NewReader(body), zstd.WithDecoderConcurrency(1), zstd.WithDecoderLowmem(true),
			zstd.WithDecoderMaxWindow(zstdMaxWindow))
		if err != nil {
			return nil, fmt.Errorf("message: zstd body: %w", err)
		}
		defer d.Close()
		src, name = d, "zstd"
	default:
		return nil, fmt.Errorf("%w: %#x", ErrUnsupportedCompression, CompressionType(sysFlag))
	}
	if maxSize > 0 {
		src = io.LimitReader(src, int64(maxSize)+1)
	}
	out, err := io.ReadAll(src)
	if err != nil {
		return nil, fmt.Errorf("message: %s body: %w", name, err)
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
