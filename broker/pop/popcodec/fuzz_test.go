package popcodec

import (
	"testing"
)

// FuzzParseExtraInfo: any receipt handle either fails cleanly or parses to
// one that encodes back to the same text.
func FuzzParseExtraInfo(f *testing.F) {
	for _, s := range []string{"100 1700000000000 60000 3 0 broker-a 1 105", "0 1 2 999 1 b 0", "1 2 3 4 2 b 0 -1", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		e, err := ParseExtraInfo(s)
		if err != nil {
			return
		}
		if got := e.String(); got != s {
			// Numbers like "+5" or "007" parse but do not round-trip; the
			// parse of the re-encoding must still be the same receipt.
			again, err := ParseExtraInfo(got)
			if err != nil || again != e {
				t.Fatalf("%q → %+v → %q → %+v, %v", s, e, got, again, err)
			}
		}
	})
}

// FuzzDecodeBatchAckBody: any body decodes or fails without panicking, and
// a decoded bit set lists a bounded number of offsets.
func FuzzDecodeBatchAckBody(f *testing.F) {
	for _, s := range []string{
		`{"acks":[{"b":"BQ==","c":"g","it":60000,"pt":1700000000000,"q":1,"r":"0","rq":3,"so":100,"t":"T"}],"brokerName":"broker-a"}`,
		`{"brokerName":"b","acks":[{"consumerGroup":"g","topic":"T","retry":1,"startOffset":"7","bitSet":[0,1]}]}`,
		`{}`, `{"acks":[{}]}`, `[`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		body, err := DecodeBatchAckBody(b)
		if err != nil {
			return
		}
		for _, a := range body.Acks {
			if n := len(a.Offsets()); n > 8*maxBitSetBytes+24 {
				t.Fatalf("%d offsets from one ack", n)
			}
		}
	})
}
