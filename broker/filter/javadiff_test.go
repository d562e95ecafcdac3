package filter

import (
	"bufio"
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// EnvJavaFilterDiff set to 1 runs TestJavaDifferential.
const EnvJavaFilterDiff = "RMQ_JAVA_FILTER_DIFF"

// javaDiffSource evaluates selectors with Apache RocketMQ's own
// rocketmq-filter: one JSON line {"sql","props"} in, one answer out —
// PARSE_ERROR, TRUE, FALSE, NULL or EXC (evaluation threw).
const javaDiffSource = `
import java.io.*;
import java.util.*;
import com.alibaba.fastjson.JSON;
import com.alibaba.fastjson.JSONObject;
import org.apache.rocketmq.filter.expression.EvaluationContext;
import org.apache.rocketmq.filter.expression.Expression;
import org.apache.rocketmq.filter.parser.SelectorParser;

public class FilterDiff {
    public static void main(String[] args) throws Exception {
        BufferedReader r = new BufferedReader(new InputStreamReader(System.in, "UTF-8"));
        PrintWriter w = new PrintWriter(new OutputStreamWriter(System.out, "UTF-8"));
        String line;
        while ((line = r.readLine()) != null) {
            JSONObject o = JSON.parseObject(line);
            final Map<String, String> props = new HashMap<>();
            JSONObject p = o.getJSONObject("props");
            if (p != null) {
                for (String k : p.keySet()) {
                    props.put(k, p.getString(k));
                }
            }
            Expression e;
            try {
                e = SelectorParser.parse(o.getString("sql"));
            } catch (Throwable t) {
                w.println("PARSE_ERROR");
                continue;
            }
            try {
                Object v = e.evaluate(new EvaluationContext() {
                    public Object get(String name) { return props.get(name); }
                    public Map<String, Object> keyValues() { return new HashMap<String, Object>(props); }
                });
                w.println(v == null ? "NULL" : v instanceof Boolean ? (((Boolean) v) ? "TRUE" : "FALSE") : "OTHER");
            } catch (Throwable t) {
                w.println("EXC");
            }
        }
        w.flush();
    }
}
`

// TestJavaDifferential compares Parse/EvalMap with Apache RocketMQ's
// rocketmq-filter on generated selectors and property sets: the same
// expressions must fail to parse, and the others must give the same
// TRUE / FALSE / NULL or evaluation error. It needs java, javac, the
// classpath of scripts/java-classpath.sh and rocketmq-filter in the local
// Maven repository; it runs only with RMQ_JAVA_FILTER_DIFF=1
// (RMQ_JAVA_FILTER_DIFF_SEED varies the generator).
func TestJavaDifferential(t *testing.T) {
	if os.Getenv(EnvJavaFilterDiff) != "1" {
		t.Skip("set " + EnvJavaFilterDiff + "=1 to compare with Apache rocketmq-filter")
	}
	cpOut, err := exec.Command(filepath.Join("..", "..", "scripts", "java-classpath.sh")).Output()
	if err != nil {
		t.Fatalf("scripts/java-classpath.sh: %v", err)
	}
	home, _ := os.UserHomeDir()
	jars, _ := filepath.Glob(filepath.Join(home, ".m2", "repository", "org", "apache", "rocketmq", "rocketmq-filter", "*", "rocketmq-filter-*.jar"))
	if len(jars) == 0 {
		t.Fatal("rocketmq-filter not in ~/.m2 (mvn dependency:get -Dartifact=org.apache.rocketmq:rocketmq-filter:5.5.0)")
	}
	cp := strings.TrimSpace(string(cpOut)) + string(os.PathListSeparator) + jars[len(jars)-1]
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "FilterDiff.java"), []byte(javaDiffSource), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("javac", "-nowarn", "-cp", cp, "-d", dir, filepath.Join(dir, "FilterDiff.java")).CombinedOutput(); err != nil {
		t.Fatalf("javac: %v\n%s", err, out)
	}

	seed, _ := strconv.Atoi(os.Getenv("RMQ_JAVA_FILTER_DIFF_SEED"))
	rng := rand.New(rand.NewPCG(uint64(seed), 42))
	props := []string{"a", "b", "c"}
	vals := []string{"5", "6", "4", "10", "-5", "+5", "5.5", " 6", "6 ", "abc", "x", "y", "true", "TRUE", "false", "NaN", "Infinity",
		"-Infinity", "3000000000", "-0.0", "0.0", "0", "1e3", "5.5f", "0x10p0", "2147483648", "9223372036854775807", "'", "''tag''", "x'y"}
	lits := []string{"5", "0", "-5", "5.5", ".5", "1e3", "3000000000", "9223372036854775807", "'x'", "'5'", "'abc'", "''", "TRUE", "FALSE",
		"NULL", "'it''s'", "2147483648", "007", "5L", "0.0", "1e400"}
	atom := func() string {
		if rng.IntN(2) == 0 {
			return props[rng.IntN(len(props))]
		}
		return lits[rng.IntN(len(lits))]
	}
	pick := func(s ...string) string { return s[rng.IntN(len(s))] }
	var gen func(d int) string
	gen = func(d int) string {
		if d <= 0 {
			return atom()
		}
		switch rng.IntN(18) {
		case 0:
			return gen(d-1) + " AND " + gen(d-1)
		case 1:
			return gen(d-1) + " OR " + gen(d-1)
		case 2:
			return "NOT " + gen(d-1)
		case 3:
			return "(" + gen(d-1) + ")"
		case 4:
			return atom() + " = " + atom()
		case 5:
			return atom() + " <> " + atom()
		case 6:
			return atom() + pick(" > ", " >= ", " < ", " <= ") + atom()
		case 7:
			return atom() + " IS NULL"
		case 8:
			return atom() + " IS NOT NULL"
		case 9:
			return atom() + pick(" BETWEEN ", " NOT BETWEEN ") + atom() + " AND " + atom()
		case 10:
			return atom() + pick(" IN ", " NOT IN ") + "('x', '5', 'y', 'abc', '6')"
		case 11:
			return atom() + pick(" CONTAINS ", " NOT STARTSWITH ", " ENDSWITH ", " NOT CONTAINS ") + pick("'x'", "''", "'b'", "'5'")
		case 12:
			return "-" + atom() + " = " + atom()
		case 13:
			return "(" + gen(d-1) + ") = " + atom()
		case 14:
			return gen(d-1) + " " + atom()
		case 15:
			return atom()
		}
		return atom() + " > -" + atom()
	}
	var sqls []string
	sqls = append(sqls, javaValid...)
	sqls = append(sqls, "1", "111111111111111111111111111111111111111111111111111", ".", "111111111111111111111111111111111111111111111111111", "a and between 2 and 10", "a > 100000000000000000000000", "a > ", " a between 10 and 0", "value contains x", "value not contains x", "value contains 123", "value not contains 123", "'axb' contains ", "'axb' not contains ", "", "   ", "a =", "a = = 1", "(a = 1", "a IN ()", "a IN ('x'", "a IN ('x',)", "a IN (1, 2)", "a BETWEEN 1", "a BETWEEN 1 OR 2", "a > 5 NOT x", "a > 5 NOT", "a IS", "a IS NOT", "a IS 5", "a IS NOT 5", "a = 'unterminated", "a = 1 /* unterminated", "a = #", "a.b = 1", "ä = 1", "a = 1 NOT \x00", ". = 1", "5", "'x'", "-a", "1.5", "a AND 5", "5 OR a", "NOT 5", "NOT 'x'", "NOT a > 1", "a > 'x'", "'x' > a", "a > TRUE", "a > NULL", "(a > 1) > 2", "a > b > c", "a >= FALSE", "a BETWEEN 'a' AND 'b'", "a BETWEEN 1 AND 'b'", "a BETWEEN NULL AND 1", "a BETWEEN 1 AND NULL", "a BETWEEN TRUE AND FALSE", "a BETWEEN FALSE AND TRUE", "a BETWEEN 2 AND 1", "a BETWEEN 1.5 AND 1", "a NOT BETWEEN 'a' AND 5", "'5' BETWEEN 1 AND 10", "a = NULL", "NULL = a", "a <> NULL", "TRUE = 1", "FALSE = 'x'", "5 IN ('a')", "-a IN ('a')", "'a' IN ('a')", "a > 0.0", "a > .0", "a > 0e5", "a > 1e400", "a > 1e-400", "a > 9223372036854775808", "a > -9223372036854775808", "(", "a = 1", ")", "NOT ", "a", "a = '", "x", "'", "Invalid MessageSelector.", "a > 5 AND b = 'x'", "((a > 5) AND (b = 'x'))", "a = 1 OR b = 2 AND c = 3", "((a = 1) OR ((b = 2) AND (c = 3)))", "(a = 1 OR b = 2) AND c = 3", "(((a = 1) OR (b = 2)) AND (c = 3))", "a = 1 AND b = 2 AND c = 3", "(((a = 1) AND (b = 2)) AND (c = 3))", "NOT a = 1", "((NOT a) = 1)", "NOT (a = 1)", "(NOT (a = 1))", "a <> 'x'", "(NOT (a = 'x'))", "a IS NULL", "(a IS NULL)", "a IS NOT NULL", "(NOT (a IS NULL))", "a BETWEEN 1 AND 5", "((a >= 1) AND (a <= 5))", "a NOT BETWEEN 1 AND 5", "((a < 1) OR (a > 5))", "a NOT BETWEEN 5 AND 1", "((a < 5) OR (a > 1))", "a BETWEEN 5 AND -5", "((a >= 5) AND (a <= (- 5)))", "a BETWEEN 1 AND 1", "((a >= 1) AND (a <= 1))", "a BETWEEN 1 AND 2.5", "((a >= 1) AND (a <= 2.5))", "a in ('x', 'y')", "(a IN ('x', 'y'))", "a NOT IN ('x')", "(a NOT IN ('x'))", "(a) IN ('x')", "(a IN ('x'))", "a NOT CONTAINS 'x'", "(a NOT CONTAINS 'x')", "a startsWith 'x' AND b EndsWith 'y'", "((a STARTSWITH 'x') AND (b ENDSWITH 'y'))", "a", "a", "a AND b", "(a AND b)", "TRUE", "TRUE", "null", "NULL", "1 = TRUE", "(1 = TRUE)", "a = b = c", "((a = b) = c)", "a > -5", "(a > (- 5))", "a > +5", "(a > 5)", "a > - - 5", "(a > (- (- 5)))", "a > 2147483647", "(a > 2147483647)", "a > 2147483648", "(a > 2147483648)", "a > 9223372036854775807L", "(a > 9223372036854775807)", "a > 5.", "(a > 5.0)", "a > .5", "(a > 0.5)", "a > 5e3", "(a > 5000.0)", "a > 1E-7", "(a > 1e-07)", "a = 'it''s'", "(a = 'it''s')", "a = ''", "(a = '')", "a = 'ünï'", "(a = 'ünï')", "a=1 and B_2$ = 2 oR c is NoT null", "(((a = 1) AND (B_2$ = 2)) OR (NOT (c IS NULL)))", "$x = 1", "($x = 1)", "_x = 1", "(_x = 1)", "notx = 1", "(notx = 1)", "a = 1 -- comment\nAND b = 2", "((a = 1) AND (b = 2))", "/* c */ a /* d\n e */ = /**/ 1", "(a = 1)", "a\t=\r\n1\f", "(a = 1)", "a > 5 garbage", "(a > 5)", "a > 5 )", "(a > 5)", "a > 5 5", "(a > 5)", "a > 5 'x' #", "(a > 5)", "a > 007", "(a > 0)", "a > 0L", "(a > 0)", "a = 1 -- no line end", "(a = 1)", "a = 1 b = 2", "(a = 1)", "a")
	// Token soup: mostly errors, exercising the lexer's longest matches.
	pieces := []string{"a", "b", "'", "''", "(", ")", "=", "<", ">", "-", "+", ".", "0", "1", "5", "e", "E", "L", "/", "*", "\n", " ", " ",
		"NOT", "AND", "OR", "IN", "IS", "NULL", "BETWEEN", "TRUE", ",", "CONTAINS", "x", "$", "_", "\t", "--", "/*", "*/"}
	for range 20000 {
		var sb strings.Builder
		for range 1 + rng.IntN(14) {
			sb.WriteString(pieces[rng.IntN(len(pieces))])
			if rng.IntN(3) == 0 {
				sb.WriteByte(' ')
			}
		}
		sqls = append(sqls, sb.String())
	}
	for range 20000 {
		sqls = append(sqls, gen(1+rng.IntN(3)))
	}

	type line struct {
		SQL   string            `json:"sql"`
		Props map[string]string `json:"props"`
	}
	var in bytes.Buffer
	var cases []line
	for _, s := range sqls {
		for range 3 {
			p := map[string]string{}
			for _, n := range props {
				if rng.IntN(3) != 0 {
					p[n] = vals[rng.IntN(len(vals))]
				}
			}
			b, _ := json.Marshal(line{s, p})
			in.Write(b)
			in.WriteByte('\n')
			cases = append(cases, line{s, p})
		}
	}
	cmd := exec.Command("java", "-Xmx256m", "-XX:+UseSerialGC", "-cp", dir+string(os.PathListSeparator)+cp, "FilterDiff")
	cmd.Stdin = &in
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("java FilterDiff: %v", err)
	}
	sc := bufio.NewScanner(bytes.NewReader(out))
	n, bad := 0, 0
	for ; sc.Scan(); n++ {
		want, c := sc.Text(), cases[n]
		got := "PARSE_ERROR"
		if x, err := Parse(c.SQL); err == nil {
			tr, err := x.EvalMap(c.Props)
			switch {
			case err != nil:
				got = "EXC"
			case tr == True:
				got = "TRUE"
			case tr == False:
				got = "FALSE"
			default:
				got = "NULL"
			}
		}
		if got != want {
			if bad++; bad <= 30 {
				t.Errorf("%q with %v: ours %s, Java %s", c.SQL, c.Props, got, want)
			}
		}
	}
	if n != len(cases) {
		t.Fatalf("Java answered %d of %d cases", n, len(cases))
	}
	t.Logf("%d cases, %d differences", n, bad)
}
