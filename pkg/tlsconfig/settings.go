// Package tlsconfig turns Apache RocketMQ's TLS settings (the tls.* keys of
// Apache remoting/src/main/java/org/apache/rocketmq/remoting/netty/TlsSystemConfig.java,
// read as Apache's TlsHelper reads them) into crypto/tls configurations:
// the server side with a certificate reloaded when its files change on disk
// (reload.go), the client side for our SDK, tools and the broker's own
// outgoing connections. docs/operations.md lists the keys.
package tlsconfig

import (
	"errors"
	"fmt"
	"os"
	"reflect"
	"strconv"
	"strings"

	"github.com/rmqgo/rmq/pkg/admin"
)

// Server modes (tls.server.mode).
const (
	ModeDisabled   = "disabled"
	ModePermissive = "permissive"
	ModeEnforcing  = "enforcing"
)

// Client authentication modes (tls.server.need.client.auth).
const (
	ClientAuthNone     = "none"
	ClientAuthOptional = "optional"
	ClientAuthRequire  = "require"
)

// DefaultConfigFile is Apache's tls.config.file default.
const DefaultConfigFile = "/etc/rocketmq/tls.properties"

// Settings are the tls.* keys (the key passwords are never shown:
// GET_BROKER_CONFIG, -p). Embedded in a program's configuration struct
// they are read from its properties file, environment and flags like every
// other key; Load then reads the file named by tls.config.file over them.
type Settings struct {
	// ServerMode is tls.server.mode: disabled, permissive (TLS and plaintext
	// on one port) or enforcing (TLS only). Apache defaults to permissive;
	// we default to disabled so that a server nobody configured for TLS
	// keeps its fastest plaintext path (docs/compatibility.md).
	ServerMode string `key:"tls.server.mode" readonly:"true"`
	// Enable is tls.enable: our outgoing connections (broker → nameserver,
	// broker → broker, HA slave → master, tools, SDK) use TLS.
	Enable bool `key:"tls.enable" readonly:"true"`
	// ConfigFile is tls.config.file: a properties file holding the keys
	// below (not tls.server.mode nor tls.enable, as in Apache); read when
	// it exists.
	ConfigFile string `key:"tls.config.file" readonly:"true"`
	// TestModeEnable is tls.test.mode.enable (default true, as Apache): a
	// server without certificate paths makes a self-signed certificate at
	// start; a client does not verify the server.
	TestModeEnable bool `key:"tls.test.mode.enable" readonly:"true"`

	ServerNeedClientAuth string `key:"tls.server.need.client.auth" readonly:"true"`
	ServerKeyPath        string `key:"tls.server.keyPath" readonly:"true"`
	ServerKeyPassword    string `key:"tls.server.keyPassword" readonly:"true" hidden:"true"`
	ServerCertPath       string `key:"tls.server.certPath" readonly:"true"`
	ServerAuthClient     bool   `key:"tls.server.authClient" readonly:"true"`
	ServerTrustCertPath  string `key:"tls.server.trustCertPath" readonly:"true"`

	ClientKeyPath       string `key:"tls.client.keyPath" readonly:"true"`
	ClientKeyPassword   string `key:"tls.client.keyPassword" readonly:"true" hidden:"true"`
	ClientCertPath      string `key:"tls.client.certPath" readonly:"true"`
	ClientAuthServer    bool   `key:"tls.client.authServer" readonly:"true"`
	ClientTrustCertPath string `key:"tls.client.trustCertPath" readonly:"true"`
}

// Defaults are Apache's defaults, except ServerMode (see Settings).
func Defaults() Settings {
	return Settings{
		ServerMode:           ModeDisabled,
		ConfigFile:           DefaultConfigFile,
		TestModeEnable:       true,
		ServerNeedClientAuth: ClientAuthNone,
	}
}

// fromFile reports whether tls.config.file may set key (Apache TlsHelper
// extractTlsConfigFromFile: everything but the mode and tls.enable).
func fromFile(key string) bool {
	switch key {
	case "", "tls.server.mode", "tls.enable", "tls.config.file":
		return false
	}
	return true
}

// Validate reports values that cannot work.
func (s Settings) Validate() error {
	switch strings.ToLower(strings.TrimSpace(s.ServerMode)) {
	case "", ModeDisabled, ModePermissive, ModeEnforcing:
	default:
		return fmt.Errorf("tls.server.mode %q: want disabled, permissive or enforcing", s.ServerMode)
	}
	switch strings.ToLower(strings.TrimSpace(s.ServerNeedClientAuth)) {
	case "", ClientAuthNone, ClientAuthOptional, ClientAuthRequire:
	default:
		return fmt.Errorf("tls.server.need.client.auth %q: want none, optional or require", s.ServerNeedClientAuth)
	}
	if (s.ServerCertPath == "") != (s.ServerKeyPath == "") {
		return errors.New("tls.server.certPath and tls.server.keyPath go together")
	}
	if (s.ClientCertPath == "") != (s.ClientKeyPath == "") {
		return errors.New("tls.client.certPath and tls.client.keyPath go together")
	}
	return nil
}

// Mode is ServerMode normalised ("" is disabled).
func (s Settings) Mode() string {
	m := strings.ToLower(strings.TrimSpace(s.ServerMode))
	if m == "" {
		return ModeDisabled
	}
	return m
}

// ServerEnabled reports whether servers accept TLS.
func (s Settings) ServerEnabled() bool { return s.Mode() != ModeDisabled }

// Load returns s with the keys of tls.config.file applied over it, when
// that file exists (Apache reads it the same way and ignores a missing
// one); a file that exists but cannot be read or parsed is an error.
func (s Settings) Load() (Settings, error) {
	if s.ConfigFile == "" {
		return s, s.Validate()
	}
	b, err := os.ReadFile(s.ConfigFile)
	if errors.Is(err, os.ErrNotExist) {
		return s, s.Validate()
	}
	if err != nil {
		return s, fmt.Errorf("tlsconfig: read tls.config.file: %w", err)
	}
	// The properties parser of the admin client (no configuration library:
	// mqadmin and mqbench read this file too).
	kv := admin.ParseProperties(string(b)).Map()
	lower := make(map[string]string, len(kv))
	for k, v := range kv {
		lower[strings.ToLower(k)] = strings.TrimSpace(v)
	}
	// The keys are the fields' key tags (startup only: reflection is fine).
	rv := reflect.ValueOf(&s).Elem()
	for i := range rv.NumField() {
		key := rv.Type().Field(i).Tag.Get("key")
		v, ok := lower[strings.ToLower(key)]
		if !ok || !fromFile(key) {
			continue
		}
		switch f := rv.Field(i); f.Kind() {
		case reflect.Bool:
			b, err := strconv.ParseBool(v)
			if err != nil {
				return s, fmt.Errorf("tlsconfig: %s: key %s: bad boolean %q", s.ConfigFile, key, v)
			}
			f.SetBool(b)
		case reflect.String:
			f.SetString(v)
		}
	}
	return s, s.Validate()
}
