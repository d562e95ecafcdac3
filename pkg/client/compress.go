package client

import (
	"bytes"
	"compress/zlib"
	"fmt"
	"io"
	"sync"

	"github.com/rmqgo/rmq/pkg/message"
)

// compressedSysFlag marks a zlib body: the compressed bit plus the ZLIB type
// bits, as Java 5.x sends (client-go sends the bit alone; every reader
// accepts both).
const compressedSysFlag = message.FlagCompressed | message.CompressionZLIB

// shouldCompress is the producers' rule (docs/protocol.md §5.9): single messages
// whose body reaches the threshold; a negative threshold disables it.
func shouldCompress(bodyLen, threshold int) bool {
	return threshold >= 0 && bodyLen >= threshold
}

// compressor deflates bodies with zlib (RFC 1950) at one level. A zlib
// writer holds several hundred KiB of state, so writers are reused.
type compressor struct {
	level int
	pool  sync.Pool // *zlib.Writer
}

func newCompressor(level int) (*compressor, error) {
	if _, err := zlib.NewWriterLevel(io.Discard, level); err != nil {
		return nil, fmt.Errorf("client: zlib level %d: %w", level, err)
	}
	return &compressor{level: level}, nil
}

func (c *compressor) compress(body []byte) ([]byte, error) {
	var buf bytes.Buffer
	buf.Grow(len(body)/2 + 64)
	w, _ := c.pool.Get().(*zlib.Writer)
	if w == nil {
		var err error
		if w, err = zlib.NewWriterLevel(&buf, c.level); err != nil {
			return nil, fmt.Errorf("client: zlib level %d: %w", c.level, err)
		}
	} else {
		w.Reset(&buf)
	}
	if _, err := w.Write(body); err != nil {
		return nil, fmt.Errorf("client: compress body: %w", err)
	}
	if err := w.Close(); err != nil {
		return nil, fmt.Errorf("client: compress body: %w", err)
	}
	c.pool.Put(w)
	return buf.Bytes(), nil
}
