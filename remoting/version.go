package remoting

import (
	"fmt"
	"strconv"
	"sync"
)

// VersionDesc is Java's MQVersion.getVersionDesc: the name of a version
// ordinal as peers announce it in every frame ("V5_5_0" for 513). Ordinals
// past the table are HIGHER_VERSION.
func VersionDesc(v int32) string {
	names := versionNames()
	switch {
	case v < 0:
		return "V" + strconv.Itoa(int(v))
	case int(v) >= len(names):
		return names[len(names)-1]
	}
	return names[v]
}

// versionNames is a read-only table built once (a constant in all but
// syntax).
var versionNames = sync.OnceValue(func() []string {
	// MQVersion.Version in ordinal order: a few 3.0.0 pre-releases, then
	// X_SNAPSHOT, X for every 3.x.y to 5.9.9 (patch 0 missing for 3.0 and
	// 3.3–3.9, 3.0 running to patch 15), then HIGHER_VERSION.
	out := make([]string, 0, 613)
	out = append(out, "V3_0_0_SNAPSHOT", "V3_0_0_ALPHA1")
	for i := 1; i <= 9; i++ {
		if i >= 6 {
			out = append(out, fmt.Sprintf("V3_0_0_BETA%d_SNAPSHOT", i))
		}
		out = append(out, fmt.Sprintf("V3_0_0_BETA%d", i))
	}
	out = append(out, "V3_0_0_FINAL")
	for major := 3; major <= 5; major++ {
		for minor := 0; minor <= 9; minor++ {
			lo, hi := 0, 9
			if major == 3 && (minor == 0 || minor >= 3) {
				lo = 1
			}
			if major == 3 && minor == 0 {
				hi = 15
			}
			for patch := lo; patch <= hi; patch++ {
				v := fmt.Sprintf("V%d_%d_%d", major, minor, patch)
				out = append(out, v+"_SNAPSHOT", v)
			}
		}
	}
	return append(out, "HIGHER_VERSION")
})
