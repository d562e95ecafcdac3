// Package filter is the broker's SQL92 message filter: a hand-written lexer
// and recursive-descent parser for Apache RocketMQ's selector language
// (org.apache.rocketmq.filter, SelectorParser.jj), evaluation against the
// stored message properties with Java's semantics, a bounded cache of
// compiled expressions, the pull processor's FilterFactory and the
// CHECK_CLIENT_CONFIG (46) handler.
//
// # Grammar
//
//	selector   = or                      (trailing input that cannot continue
//	                                      the expression is ignored, as in Java:
//	                                      the grammar has no <EOF>)
//	or         = and { OR and }
//	and        = equality { AND equality }
//	equality   = comparison { ("=" | "<>") comparison | IS NULL | IS NOT NULL }
//	comparison = unary { (">" | ">=" | "<" | "<=") unary
//	                   | [NOT] (CONTAINS | STARTSWITH | ENDSWITH) string
//	                   | [NOT] BETWEEN unary AND unary
//	                   | [NOT] IN "(" string { "," string } ")" }
//	unary      = "+" unary | "-" unary | NOT unary | primary
//	primary    = string | decimal | float | TRUE | FALSE | NULL | ident | "(" or ")"
//
// Keywords are case-insensitive. Identifiers are [A-Za-z_$][A-Za-z0-9_$]*
// (so property names with dots cannot be used). Strings are single-quoted
// with a doubled quote standing for one. Integers are 0 or [1-9][0-9]* with an optional L
// (a leading zero ends the number: 007 is three tokens); they are Java
// Integers when they fit, else Longs. Floats (1.5, 1., .5, 1e5) must be
// finite and at least Double.MIN_VALUE, so a zero float literal is refused,
// as in Java. -- comments run to a line end, /* */ comments anywhere.
// There is no LIKE (RocketMQ removed it from ActiveMQ's grammar) and no
// arithmetic besides unary minus.
//
// NOT binds tighter than comparisons: "NOT a > 1" is NOT applied to a, then
// compared, which Java refuses; write "NOT (a > 1)".
//
// Java's parse-time checks are kept: '>' '>=' '<' '<=' and BETWEEN accept
// only numeric literals (or properties and negations); '=' and '<>' refuse
// NULL (use IS NULL); TRUE = 1 is refused but 1 = TRUE is not; BETWEEN with
// two literal bounds needs low ≤ high; IN needs a property on its left; AND,
// OR, NOT and the whole selector need boolean operands (a bare property is
// cast: only a Boolean value is true, so a property alone never matches).
//
// # Evaluation
//
// Properties are strings; a missing one is null. The result is TRUE,
// FALSE or UNKNOWN (null), and only TRUE delivers the message:
//
//   - Comparing null with anything ('=', '>', BETWEEN, IN) is UNKNOWN,
//     except null = null, which is TRUE, and x IS NULL / IS NOT NULL.
//   - AND / OR short-circuit left to right on FALSE / TRUE; otherwise an
//     UNKNOWN operand makes the result UNKNOWN; NOT UNKNOWN is UNKNOWN.
//   - A string property compared with a number is converted to the
//     number's Java type: a = 5 and a > 5 parse the property with
//     Integer.valueOf (so "5.5", " 6" or "3000000000" are errors), a > 5.0
//     with Double.valueOf (which trims and accepts "6", "6.5", "1e3",
//     "NaN"), 5000000000 is a Long literal. Two properties are ordered as
//     doubles. Strings compared with TRUE/FALSE use Boolean.valueOf.
//   - [NOT] CONTAINS / STARTSWITH / ENDSWITH are FALSE (not UNKNOWN) for a
//     missing property or an empty search string, also when negated.
//   - An evaluation error (a failed conversion) propagates to the top and
//     the message does not match, even inside OR.
package filter
