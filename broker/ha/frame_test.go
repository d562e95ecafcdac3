package ha

import (
	"bytes"
	"errors"
	"io"
	"testing"
)

func TestFrameRoundTrip(t *testing.T) {
	var stream []byte
	stream = AppendHeader(stream, 4096, 3)
	stream = append(stream, 'a', 'b', 'c')
	stream = AppendHeader(stream, 4099, 0)
	tr := NewTransferReader(bytes.NewReader(stream))
	f, err := tr.Next()
	if err != nil || f.Start != 4096 || string(f.Body) != "abc" {
		t.Fatalf("first frame %+v %v", f, err)
	}
	f, err = tr.Next()
	if err != nil || f.Start != 4099 || len(f.Body) != 0 {
		t.Fatalf("keep-alive frame %+v %v", f, err)
	}
	if _, err := tr.Next(); !errors.Is(err, io.EOF) {
		t.Fatalf("end: %v", err)
	}

	var buf [ReportSize]byte
	off, err := ReadReport(bytes.NewReader(AppendReport(nil, 1<<40)), &buf)
	if err != nil || off != 1<<40 {
		t.Fatalf("report %d %v", off, err)
	}
	if want := []byte{0, 0, 1, 0, 0, 0, 0, 0}; !bytes.Equal(AppendReport(nil, 1<<40), want) {
		t.Fatal("report is not big-endian")
	}
}

func TestFrameRejects(t *testing.T) {
	for name, stream := range map[string][]byte{
		"body too large": AppendHeader(nil, 0, MaxTransferBody+1),
		"negative body":  AppendHeader(nil, 0, -1),
		"negative start": AppendHeader(nil, -5, 1),
	} {
		if _, err := NewTransferReader(bytes.NewReader(stream)).Next(); !errors.Is(err, ErrBadFrame) {
			t.Errorf("%s: %v", name, err)
		}
	}
	partial := append(AppendHeader(nil, 0, 10), 1, 2, 3)
	if _, err := NewTransferReader(bytes.NewReader(partial)).Next(); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("partial body: %v", err)
	}
	if _, err := NewTransferReader(bytes.NewReader(partial[:7])).Next(); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("partial header: %v", err)
	}
	var buf [ReportSize]byte
	if _, err := ReadReport(bytes.NewReader(AppendReport(nil, -1)), &buf); !errors.Is(err, ErrBadFrame) {
		t.Errorf("negative report: %v", err)
	}
}

// FuzzTransferReader: whatever the bytes, the decoder never panics, and
// the frames it returns re-encode to exactly the bytes it consumed.
func FuzzTransferReader(f *testing.F) {
	f.Add(append(AppendHeader(nil, 0, 2), 'h', 'i'))
	f.Add(AppendHeader(nil, 1<<30, 0))
	f.Add(AppendHeader(nil, 0, MaxTransferBody+1))
	f.Add(append(AppendHeader(nil, 7, 100), 1, 2))
	f.Fuzz(func(t *testing.T, data []byte) {
		r := bytes.NewReader(data)
		tr := NewTransferReader(r)
		checkReencoded(t, data, r, func(again []byte) ([]byte, error) {
			fr, err := tr.Next()
			if err != nil {
				return again, err
			}
			if fr.Start < 0 || len(fr.Body) > MaxTransferBody {
				t.Fatalf("accepted %d, %d bytes", fr.Start, len(fr.Body))
			}
			return append(AppendHeader(again, fr.Start, len(fr.Body)), fr.Body...), nil
		})
	})
}
