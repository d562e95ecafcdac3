// Package randproto fills protobuf messages with random values for bad-input
// tests (a package of its own: only its importers need protobuf).
package randproto

import (
	"bytes"
	"math/rand/v2"

	"google.golang.org/protobuf/reflect/protoreflect"
)

// Fill sets random values in about two thirds of m's fields, depth
// levels of messages deep: strings drawn from strs, bytes of 0 to 200
// bytes, numbers and enum values near the edges (negative, zero, large,
// unknown enum values). Bad-input tests send what it makes to every rpc.
func Fill(r *rand.Rand, m protoreflect.Message, depth int, strs []string) {
	fields := m.Descriptor().Fields()
	for i := 0; i < fields.Len(); i++ {
		fd := fields.Get(i)
		if r.IntN(3) == 0 || fd.ContainingOneof() != nil && r.IntN(2) == 0 {
			continue
		}
		switch {
		case fd.IsMap():
			mp := m.Mutable(fd).Map()
			for j := r.IntN(3); j > 0; j-- {
				if fd.MapKey().Kind() == protoreflect.StringKind && fd.MapValue().Kind() == protoreflect.StringKind {
					mp.Set(protoreflect.ValueOfString(strs[r.IntN(len(strs))]).MapKey(), protoreflect.ValueOfString(strs[r.IntN(len(strs))]))
				}
			}
		case fd.IsList():
			l := m.Mutable(fd).List()
			for j := r.IntN(3); j > 0; j-- {
				if fd.Kind() == protoreflect.MessageKind {
					if depth > 0 {
						e := l.NewElement()
						Fill(r, e.Message(), depth-1, strs)
						l.Append(e)
					}
				} else if v, ok := randomScalar(r, fd, strs); ok {
					l.Append(v)
				}
			}
		case fd.Kind() == protoreflect.MessageKind || fd.Kind() == protoreflect.GroupKind:
			if depth > 0 {
				Fill(r, m.Mutable(fd).Message(), depth-1, strs)
			}
		default:
			if v, ok := randomScalar(r, fd, strs); ok {
				m.Set(fd, v)
			}
		}
	}
}

func randomScalar(r *rand.Rand, fd protoreflect.FieldDescriptor, strs []string) (protoreflect.Value, bool) {
	switch fd.Kind() {
	case protoreflect.StringKind:
		return protoreflect.ValueOfString(strs[r.IntN(len(strs))]), true
	case protoreflect.BytesKind:
		return protoreflect.ValueOfBytes(bytes.Repeat([]byte{'x'}, r.IntN(3)*100)), true
	case protoreflect.BoolKind:
		return protoreflect.ValueOfBool(r.IntN(2) == 0), true
	case protoreflect.EnumKind:
		return protoreflect.ValueOfEnum(protoreflect.EnumNumber(r.IntN(12) - 1)), true
	case protoreflect.Int32Kind, protoreflect.Sint32Kind, protoreflect.Sfixed32Kind:
		return protoreflect.ValueOfInt32([]int32{0, -1, 1, 32, 1 << 30, -1 << 31}[r.IntN(6)]), true
	case protoreflect.Int64Kind, protoreflect.Sint64Kind, protoreflect.Sfixed64Kind:
		return protoreflect.ValueOfInt64([]int64{0, -1, 1, 1 << 40, -1 << 63, 1<<63 - 1}[r.IntN(6)]), true
	case protoreflect.Uint32Kind, protoreflect.Fixed32Kind:
		return protoreflect.ValueOfUint32(uint32(r.IntN(3))), true
	case protoreflect.Uint64Kind, protoreflect.Fixed64Kind:
		return protoreflect.ValueOfUint64(uint64(r.IntN(3))), true
	case protoreflect.FloatKind:
		return protoreflect.ValueOfFloat32(float32(r.IntN(3)) - 1), true
	case protoreflect.DoubleKind:
		return protoreflect.ValueOfFloat64(float64(r.IntN(3)) - 1), true
	}
	return protoreflect.Value{}, false
}
