// Package config loads program configuration the way Apache RocketMQ users
// write it: Java properties files with Apache's keys (broker.conf,
// namesrv.conf), overridden by environment variables and command-line flags.
//
// A configuration is a struct whose fields carry a `key:"listenPort"` tag
// naming the Apache property. Defaults are whatever the struct holds before
// Load. Keys that match no field are returned so the caller can report them.
package config

import (
	"fmt"
	"os"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/magiconair/properties"
	"github.com/spf13/viper"
)

// propertiesCodec lets viper read Java properties files (viper ≥ 1.20 no
// longer ships that codec).
type propertiesCodec struct{}

func (propertiesCodec) Decode(b []byte, v map[string]any) error {
	p, err := properties.Load(b, properties.UTF8)
	if err != nil {
		return err
	}
	for _, k := range p.Keys() {
		val, _ := p.Get(k)
		v[k] = val
	}
	return nil
}

func (propertiesCodec) Encode(v map[string]any) ([]byte, error) {
	p := properties.NewProperties()
	for k, val := range v {
		if _, _, err := p.Set(k, fmt.Sprint(val)); err != nil {
			return nil, err
		}
	}
	var b strings.Builder
	_, err := p.Write(&b, properties.UTF8)
	return []byte(b.String()), err
}

// Source describes where configuration comes from, lowest precedence first:
// the file, then the environment, then explicit overrides (flags).
type Source struct {
	// File is a properties file path; empty for none.
	File string
	// EnvPrefix, when set, maps key listenPort to env PREFIX_LISTEN_PORT.
	EnvPrefix string
	// Environ is the environment as KEY=VALUE lines (os.Environ()); injected
	// so tests need not touch the process environment.
	Environ []string
	// Overrides are key=value pairs that win over everything (flags).
	Overrides map[string]string
}

// Load applies src to dst (a pointer to a tagged struct) and returns the keys
// from the file and overrides that match no field.
func Load(dst any, src Source) (unknown []string, err error) {
	_, unknown, err = LoadSet(dst, src)
	return unknown, err
}

// LoadSet is Load that also returns the keys src sets (file, environment or
// overrides), in their canonical spelling, sorted.
func LoadSet(dst any, src Source) (set, unknown []string, err error) {
	fields, err := fieldsOf(dst)
	if err != nil {
		return nil, nil, err
	}
	reg := viper.NewCodecRegistry()
	if err := reg.RegisterCodec("properties", propertiesCodec{}); err != nil {
		return nil, nil, err
	}
	// A delimiter that never occurs keeps dotted keys flat.
	v := viper.NewWithOptions(viper.WithCodecRegistry(reg), viper.KeyDelimiter("\x00"))
	if src.File != "" {
		v.SetConfigFile(src.File)
		v.SetConfigType("properties")
		if err := v.ReadInConfig(); err != nil {
			return nil, nil, fmt.Errorf("config: read %s: %w", src.File, err)
		}
	}
	values := map[string]string{} // lower-case key → value
	for _, k := range v.AllKeys() {
		values[strings.ToLower(k)] = v.GetString(k)
	}
	if src.EnvPrefix != "" {
		env := map[string]string{}
		for _, kv := range src.Environ {
			if i := strings.IndexByte(kv, '='); i > 0 {
				env[kv[:i]] = kv[i+1:]
			}
		}
		for lk, f := range fields {
			if val, ok := env[src.EnvPrefix+"_"+EnvName(f.key)]; ok {
				values[lk] = val
			}
		}
	}
	for k, val := range src.Overrides {
		values[strings.ToLower(k)] = val
	}
	keys := make([]string, 0, len(values))
	for k := range values {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, lk := range keys {
		f, ok := fields[lk]
		if !ok {
			unknown = append(unknown, lk)
			continue
		}
		if err := f.set(values[lk]); err != nil {
			return set, unknown, fmt.Errorf("config: key %s: %w", f.key, err)
		}
		set = append(set, f.key)
	}
	sort.Strings(set)
	return set, unknown, nil
}

// EnvName turns listenPort into LISTEN_PORT.
func EnvName(key string) string {
	var b strings.Builder
	for i, r := range key {
		if unicode.IsUpper(r) && i > 0 {
			b.WriteByte('_')
		}
		if r == '.' {
			r = '_'
		}
		b.WriteRune(unicode.ToUpper(r))
	}
	return b.String()
}

// Set assigns one key (case-insensitive) from its string form.
func Set(dst any, key, value string) error {
	fields, err := fieldsOf(dst)
	if err != nil {
		return err
	}
	f, ok := fields[strings.ToLower(key)]
	if !ok {
		return fmt.Errorf("config: unknown key %q", key)
	}
	return f.set(value)
}

// Has reports whether the struct has a field for key.
func Has(dst any, key string) bool {
	fields, err := fieldsOf(dst)
	if err != nil {
		return false
	}
	_, ok := fields[strings.ToLower(key)]
	return ok
}

// Map returns every key with its current value in string form, except
// the fields tagged `hidden:"true"` (secrets: they are set like any key but
// never shown nor written back).
func Map(src any) map[string]string {
	fields, err := fieldsOf(src)
	if err != nil {
		return nil
	}
	m := make(map[string]string, len(fields))
	for _, f := range fields {
		if !f.hidden {
			m[f.key] = f.get()
		}
	}
	return m
}

// Properties renders the struct as a properties text, keys sorted.
func Properties(src any) string { return render(src, nil) }

// NoEffectTag marks a field whose key is accepted (so that Apache's
// configuration files load) but changes nothing: `effect:"none"`.
const NoEffectTag = "effect"

// NoEffectComment is the line that precedes a no-effect key in
// AnnotatedProperties: a properties comment, so the text still parses.
const NoEffectComment = "# accepted, no effect"

// NoEffectKeys lists, sorted, the keys of src's fields tagged
// `effect:"none"`.
func NoEffectKeys(src any) []string {
	var out []string
	for _, f := range KeyedFields(reflect.TypeOf(src)) {
		if f.Tag.Get(NoEffectTag) == "none" {
			out = append(out, f.Tag.Get("key"))
		}
	}
	sort.Strings(out)
	return out
}

// KeyedFields lists, in declaration order, the exported fields of the
// struct type t (or pointer to one) that carry a `key` tag other than "-",
// walking embedded structs. Each field's Index is its path from t, for
// reflect.Value.FieldByIndex.
func KeyedFields(t reflect.Type) []reflect.StructField {
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	var out []reflect.StructField
	var walk func(t reflect.Type, path []int)
	walk = func(t reflect.Type, path []int) {
		for i := 0; i < t.NumField(); i++ {
			f := t.Field(i)
			if !f.IsExported() {
				continue
			}
			f.Index = append(append([]int(nil), path...), i)
			if f.Anonymous && f.Type.Kind() == reflect.Struct {
				walk(f.Type, f.Index)
				continue
			}
			if k := f.Tag.Get("key"); k != "" && k != "-" {
				out = append(out, f)
			}
		}
	}
	walk(t, nil)
	return out
}

// NoEffectSet returns, sorted and in their canonical spelling, the keys of
// set (matched case-insensitively, as Load matches them) that src marks
// `effect:"none"`.
func NoEffectSet(src any, set []string) []string {
	none := map[string]string{}
	for _, k := range NoEffectKeys(src) {
		none[strings.ToLower(k)] = k
	}
	var out []string
	for _, k := range set {
		if c, ok := none[strings.ToLower(k)]; ok && !slices.Contains(out, c) {
			out = append(out, c)
		}
	}
	sort.Strings(out)
	return out
}

// AnnotatedProperties is Properties with NoEffectComment on the line before
// each key tagged `effect:"none"` (what `-p` prints): the key=value lines
// are the same, and a properties reader skips the comments.
func AnnotatedProperties(src any) string {
	none := map[string]bool{}
	for _, k := range NoEffectKeys(src) {
		none[k] = true
	}
	return render(src, none)
}

// render writes key=value lines sorted by key, NoEffectComment before the
// keys in mark.
func render(src any, mark map[string]bool) string {
	m := Map(src)
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for _, k := range keys {
		if mark[k] {
			b.WriteString(NoEffectComment)
			b.WriteByte('\n')
		}
		b.WriteString(k)
		b.WriteByte('=')
		b.WriteString(escapeValue(m[k]))
		b.WriteByte('\n')
	}
	return b.String()
}

func escapeValue(s string) string {
	r := strings.NewReplacer("\\", "\\\\", "\n", "\\n", "\r", "\\r", "\t", "\\t")
	return r.Replace(s)
}

// Spelled maps the lower-cased unknown keys Load reports back to how the
// user wrote them, in file (a properties file; "" for none) or as keys of
// more (overrides, overlays); keys found in neither stay lower-cased. The
// result is sorted, nil when unknown is empty.
func Spelled(unknown []string, file string, more ...map[string]string) []string {
	if len(unknown) == 0 {
		return nil
	}
	spelled := map[string]string{}
	if file != "" {
		if b, err := os.ReadFile(file); err == nil {
			if kv, err := ParseProperties(b); err == nil {
				for k := range kv {
					spelled[strings.ToLower(k)] = k
				}
			}
		}
	}
	for _, m := range more {
		for k := range m {
			spelled[strings.ToLower(k)] = k
		}
	}
	out := make([]string, 0, len(unknown))
	for _, k := range unknown {
		if s, ok := spelled[k]; ok {
			k = s
		}
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// ParseProperties parses a Java properties text (the body of
// UPDATE_BROKER_CONFIG and UPDATE_NAMESRV_CONFIG).
func ParseProperties(b []byte) (map[string]string, error) {
	p, err := properties.Load(b, properties.UTF8)
	if err != nil {
		return nil, fmt.Errorf("config: parse properties: %w", err)
	}
	return p.Map(), nil
}

type field struct {
	key    string
	v      reflect.Value
	hidden bool
}

func fieldsOf(dst any) (map[string]field, error) {
	rv := reflect.ValueOf(dst)
	if rv.Kind() != reflect.Pointer || rv.Elem().Kind() != reflect.Struct {
		return nil, fmt.Errorf("config: need a pointer to a struct, got %T", dst)
	}
	sv := rv.Elem()
	out := map[string]field{}
	for _, sf := range KeyedFields(sv.Type()) {
		key := sf.Tag.Get("key")
		out[strings.ToLower(key)] = field{key: key, v: sv.FieldByIndex(sf.Index), hidden: sf.Tag.Get("hidden") == "true"}
	}
	return out, nil
}

var durationType = reflect.TypeOf(time.Duration(0))

func (f field) set(s string) error {
	s = strings.TrimSpace(s)
	switch {
	case f.v.Type() == durationType:
		// Apache configures durations as milliseconds.
		if n, err := strconv.ParseInt(s, 10, 64); err == nil {
			f.v.SetInt(int64(time.Duration(n) * time.Millisecond))
			return nil
		}
		d, err := time.ParseDuration(s)
		if err != nil {
			return fmt.Errorf("bad duration %q", s)
		}
		f.v.SetInt(int64(d))
	case f.v.Kind() == reflect.String:
		f.v.SetString(s)
	case f.v.Kind() == reflect.Bool:
		b, err := strconv.ParseBool(s)
		if err != nil {
			return fmt.Errorf("bad boolean %q", s)
		}
		f.v.SetBool(b)
	case f.v.CanInt():
		n, err := strconv.ParseInt(s, 10, f.v.Type().Bits())
		if err != nil {
			return fmt.Errorf("bad integer %q", s)
		}
		f.v.SetInt(n)
	case f.v.CanUint():
		n, err := strconv.ParseUint(s, 10, f.v.Type().Bits())
		if err != nil {
			return fmt.Errorf("bad integer %q", s)
		}
		f.v.SetUint(n)
	case f.v.CanFloat():
		n, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return fmt.Errorf("bad number %q", s)
		}
		f.v.SetFloat(n)
	default:
		return fmt.Errorf("unsupported field type %s", f.v.Type())
	}
	return nil
}

func (f field) get() string {
	switch {
	case f.v.Type() == durationType:
		return strconv.FormatInt(int64(time.Duration(f.v.Int())/time.Millisecond), 10)
	case f.v.Kind() == reflect.String:
		return f.v.String()
	case f.v.Kind() == reflect.Bool:
		return strconv.FormatBool(f.v.Bool())
	case f.v.CanInt():
		return strconv.FormatInt(f.v.Int(), 10)
	case f.v.CanUint():
		return strconv.FormatUint(f.v.Uint(), 10)
	case f.v.CanFloat():
		return strconv.FormatFloat(f.v.Float(), 'f', -1, 64)
	}
	return fmt.Sprint(f.v.Interface())
}
