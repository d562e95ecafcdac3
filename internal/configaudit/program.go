package configaudit

import "testing"

// ScanProgram makes the scans a program's config test audits with, run
// from the program's config package directory: program is every use in
// the program module outside config (".."), plus the shared pkg/tlsconfig
// (the tls.* keys are an embedded tlsconfig.Settings, read by that package
// on the program's behalf); own is every use in the config package itself,
// leaving out the subdirectories ownSkip returns true for (nil: none).
func ScanProgram(ownSkip func(dir string) bool) (program, own []Use, err error) {
	program, err = Scan("..", func(dir string) bool { return dir == "config" })
	if err != nil {
		return nil, nil, err
	}
	tlsUses, err := Scan("../../pkg/tlsconfig", nil)
	if err != nil {
		return nil, nil, err
	}
	own, err = Scan(".", ownSkip)
	if err != nil {
		return nil, nil, err
	}
	return append(program, tlsUses...), own, nil
}

// Report fails t with each problem.
func Report(t testing.TB, problems []string) {
	t.Helper()
	for _, p := range problems {
		t.Error(p)
	}
}

// RequireDocFile fails t where the NAME block of the file at path differs
// from keys (CheckDocFile; with update it rewrites the block instead).
func RequireDocFile(t testing.TB, path, name string, keys []string, update bool) {
	t.Helper()
	problems, err := CheckDocFile(path, name, keys, update)
	if err != nil {
		t.Fatal(err)
	}
	Report(t, problems)
}
