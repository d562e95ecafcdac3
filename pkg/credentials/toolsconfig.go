package credentials

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"strings"
)

// ToolsConfigKeys are the keys of Apache's conf/tools.yml, the file the Java
// mqadmin reads its credentials from ($ROCKETMQ_HOME/conf/tools.yml,
// org/apache/rocketmq/acl/common/AclUtils.getAclRPCHook).
const (
	ToolsConfigAccessKey = "accessKey"
	ToolsConfigSecretKey = "secretKey"
)

// ToolsConfigFile is where the Java tools look, under ROCKETMQ_HOME.
const ToolsConfigFile = "conf/tools.yml"

// ReadToolsConfig reads a tools.yml file. As the Java tools, it returns nil
// (no signing) when either key is missing or blank.
func ReadToolsConfig(path string) (*Credentials, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read credentials: %w", err)
	}
	kv, err := parseFlatYAML(data)
	if err != nil {
		return nil, fmt.Errorf("read credentials %s: %w", path, err)
	}
	c := Credentials{AccessKey: strings.TrimSpace(kv[ToolsConfigAccessKey]), SecretKey: strings.TrimSpace(kv[ToolsConfigSecretKey])}
	if c.Validate() != nil {
		return nil, nil
	}
	return &c, nil
}

// parseFlatYAML reads the top-level "key: value" pairs of a YAML mapping,
// what tools.yml holds: comments, blank lines and indented (nested) lines
// are skipped; values may be single- or double-quoted.
func parseFlatYAML(data []byte) (map[string]string, error) {
	out := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	n := 0
	for sc.Scan() {
		n++
		line := strings.TrimRight(sc.Text(), " \t\r")
		if t := strings.TrimSpace(line); t == "" || strings.HasPrefix(t, "#") || t == "---" {
			continue
		}
		if line[0] == ' ' || line[0] == '\t' || line[0] == '-' {
			continue
		}
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			return nil, fmt.Errorf("line %d: not a key: value pair", n)
		}
		v = strings.TrimSpace(v)
		switch {
		case len(v) >= 2 && (v[0] == '"' && v[len(v)-1] == '"' || v[0] == '\'' && v[len(v)-1] == '\''):
			v = v[1 : len(v)-1]
		default:
			if i := strings.Index(v, " #"); i >= 0 {
				v = strings.TrimSpace(v[:i])
			}
		}
		out[strings.TrimSpace(k)] = v
	}
	return out, sc.Err()
}
