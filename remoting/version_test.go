package remoting

import "testing"

func TestVersionDesc(t *testing.T) {
	for v, want := range map[int32]string{0: "V3_0_0_SNAPSHOT", 28: "V3_0_7_SNAPSHOT", 62: "V3_1_8_SNAPSHOT", 121: "V3_4_9", 317: "V4_5_2", 401: "V4_9_4", 479: "V5_3_3", 513: "V5_5_0", 515: "V5_5_1", 9999: "HIGHER_VERSION", -1: "V-1"} {
		if got := VersionDesc(v); got != want {
			t.Errorf("VersionDesc(%d) = %s, want %s", v, got, want)
		}
	}
	if n := len(versionNames()); n != 613 {
		t.Errorf("%d version names", n)
	}
}
