package message

import "strconv"

// DelayLevel reads the DELAY property of props (0 when absent or
// malformed).
func DelayLevel(props map[string]string) int {
	v, ok := props[PropertyDelayTimeLevel]
	if !ok {
		return 0 // the usual case: no parse, and no syntax error allocated per send
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		return 0
	}
	return n
}

// IsScheduled reports whether props ask for delayed delivery, as a
// broker's send path decides it: a positive DELAY level or any timer
// property.
func IsScheduled(props map[string]string) bool {
	if DelayLevel(props) > 0 {
		return true
	}
	for _, k := range [...]string{PropertyTimerDeliverMS, PropertyTimerDelaySec, PropertyTimerDelayMS} {
		if _, ok := props[k]; ok {
			return true
		}
	}
	return false
}
