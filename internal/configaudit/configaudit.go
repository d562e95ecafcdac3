// Package configaudit lets the programs' config tests check the keys marked
// `effect:"none"` (accepted, no effect) against the code: a reflective list
// of a configuration's keys and a syntactic scan of which struct fields the
// program's Go files read. It is used by tests only.
//
// The scan goes by field name (no type information): a field of another
// struct with the same name counts as a read. That errs on the side of
// "read", so a key found unread is unread; a no-effect key found read is
// reported and must be looked at (and, if the read changes nothing, listed
// as allowed with the file that reads it).
package configaudit

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"reflect"
	"sort"
	"strings"

	"github.com/rmqgo/rmq/pkg/config"
)

// Field is one configuration key: the Go field and its properties key.
type Field struct {
	Name     string // Go field name
	Key      string // `key` tag
	NoEffect bool   // `effect:"none"`
}

// Fields lists the keyed fields of the struct v (a value or pointer),
// walking embedded structs, in declaration order.
func Fields(v any) []Field {
	var out []Field
	for _, f := range config.KeyedFields(reflect.TypeOf(v)) {
		out = append(out, Field{Name: f.Name, Key: f.Tag.Get("key"), NoEffect: f.Tag.Get(config.NoEffectTag) == "none"})
	}
	return out
}

// Use is one name a function uses: a selector (x.Name, not the target of
// an assignment) or a called identifier (Name(...)).
type Use struct {
	Name string
	File string // relative to the scanned root, slash-separated
	Line int
	Func string // enclosing top-level function; methods as "Recv.Name"; "" outside functions
}

// Scan parses the non-test Go files under root (skipping testdata, hidden
// directories and those skipDir, given a slash-separated path relative to
// root, returns true for) and returns every use.
func Scan(root string, skipDir func(dir string) bool) ([]Use, error) {
	var out []Use
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, path)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			if rel != "." && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata") {
				return filepath.SkipDir
			}
			if skipDir != nil && skipDir(rel) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return fmt.Errorf("configaudit: %w", err)
		}
		for _, decl := range f.Decls {
			fn := ""
			if fd, ok := decl.(*ast.FuncDecl); ok {
				fn = funcName(fd)
			}
			out = append(out, uses(fset, decl, rel, fn)...)
		}
		return nil
	})
	return out, err
}

func funcName(fd *ast.FuncDecl) string {
	if fd.Recv == nil || len(fd.Recv.List) == 0 {
		return fd.Name.Name
	}
	t := fd.Recv.List[0].Type
	if s, ok := t.(*ast.StarExpr); ok {
		t = s.X
	}
	if id, ok := t.(*ast.Ident); ok {
		return id.Name + "." + fd.Name.Name
	}
	return fd.Name.Name
}

func uses(fset *token.FileSet, n ast.Node, file, fn string) []Use {
	var out []Use
	written := map[*ast.SelectorExpr]bool{}
	add := func(name string, pos token.Pos) {
		out = append(out, Use{Name: name, File: file, Line: fset.Position(pos).Line, Func: fn})
	}
	ast.Inspect(n, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.AssignStmt:
			for _, l := range n.Lhs {
				if s, ok := l.(*ast.SelectorExpr); ok {
					written[s] = true
				}
			}
		case *ast.CallExpr:
			if id, ok := n.Fun.(*ast.Ident); ok {
				add(id.Name, id.Pos())
			}
		case *ast.SelectorExpr:
			if !written[n] {
				add(n.Sel.Name, n.Sel.Pos())
			}
		}
		return true
	})
	return out
}

// Audit is what Check needs to know about one program.
type Audit struct {
	// Fields are the configuration's keys (Fields of its struct).
	Fields []Field
	// Program are the uses outside the configuration package (Scan of the
	// program's module, skipping the configuration package).
	Program []Use
	// Config are the uses inside the configuration package.
	Config []Use
	// Inert reports configuration-package functions whose reads are not
	// effects: validation, defaults, warnings ("Config.Validate",
	// "defaultBrokerConfig").
	Inert func(fn string) bool
	// Allowed lists, per no-effect key, the files (relative to the module)
	// whose reads of it change nothing (a value shown, never acted on).
	Allowed map[string][]string
	// Pending are keys being wired elsewhere: they must not be marked, and
	// are otherwise not checked.
	Pending map[string]bool
}

// Check returns one line per disagreement between the marks and the code:
// a key marked `effect:"none"` that the program reads (directly, or through
// a function of the configuration package the program calls) outside
// Allowed, and an unmarked key that nothing reads.
func Check(a Audit) []string {
	progRead := map[string][]string{}
	for _, u := range a.Program {
		progRead[u.Name] = append(progRead[u.Name], fmt.Sprintf("%s:%d", u.File, u.Line))
	}
	// Functions of the configuration package reachable from the program:
	// names the program uses, then what those functions use, to a fixed
	// point (by name: over-approximate).
	byFunc := map[string][]Use{}
	for _, u := range a.Config {
		if u.Func == "" || (a.Inert != nil && a.Inert(u.Func)) {
			continue
		}
		short := u.Func[strings.LastIndexByte(u.Func, '.')+1:]
		byFunc[short] = append(byFunc[short], u)
	}
	called := map[string]bool{}
	var queue []string
	for name := range progRead {
		if _, ok := byFunc[name]; ok && !called[name] {
			called[name] = true
			queue = append(queue, name)
		}
	}
	helperRead := map[string][]string{}
	for len(queue) > 0 {
		fn := queue[0]
		queue = queue[1:]
		for _, u := range byFunc[fn] {
			helperRead[u.Name] = append(helperRead[u.Name], fmt.Sprintf("%s:%d (%s)", u.File, u.Line, u.Func))
			if _, ok := byFunc[u.Name]; ok && !called[u.Name] {
				called[u.Name] = true
				queue = append(queue, u.Name)
			}
		}
	}
	var out []string
	for _, f := range a.Fields {
		switch {
		case a.Pending[f.Key]:
			if f.NoEffect {
				out = append(out, fmt.Sprintf("%s: being wired elsewhere, must not be marked effect:\"none\"", f.Key))
			}
		case f.NoEffect:
			var bad []string
			for _, pos := range progRead[f.Name] {
				if !allowed(a.Allowed[f.Key], pos) {
					bad = append(bad, pos)
				}
			}
			bad = append(bad, helperRead[f.Name]...)
			if len(bad) > 0 {
				sort.Strings(bad)
				out = append(out, fmt.Sprintf("%s is marked effect:\"none\" but %s reads it at %s", f.Key, f.Name, strings.Join(bad, ", ")))
			}
		default:
			if len(progRead[f.Name]) == 0 && len(helperRead[f.Name]) == 0 {
				out = append(out, fmt.Sprintf("%s (%s) is read nowhere outside the config package: mark it effect:\"none\" or wire it", f.Key, f.Name))
			}
		}
	}
	for k := range a.Allowed {
		if !hasKey(a.Fields, k) {
			out = append(out, fmt.Sprintf("Allowed names %s, which is no key", k))
		}
	}
	sort.Strings(out)
	return out
}

func allowed(files []string, pos string) bool {
	for _, f := range files {
		if strings.HasPrefix(pos, f+":") {
			return true
		}
	}
	return false
}

func hasKey(fields []Field, key string) bool {
	for _, f := range fields {
		if f.Key == key {
			return true
		}
	}
	return false
}
