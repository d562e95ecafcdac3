package code

import (
	"go/ast"
	"go/parser"
	"go/token"
	"strconv"
	"strings"
	"testing"
)

func TestNames(t *testing.T) {
	for _, tc := range []struct {
		c        int32
		name     func(int32) string
		expected string
	}{
		{SendMessage, RequestName, "SEND_MESSAGE"},
		{GetRouteInfoByTopic, RequestName, "GET_ROUTEINFO_BY_TOPIC"},
		{ChangeMessageInvisible, RequestName, "CHANGE_MESSAGE_INVISIBLETIME"},
		{UpdateAndCreateSubscriptionGroup, RequestName, "UPDATE_AND_CREATE_SUBSCRIPTIONGROUP"},
		{SendMessageV2, RequestName, "SEND_MESSAGE_V2"},
		{AuthCreateUser, RequestName, "AUTH_CREATE_USER"},
		{AuthListACL, RequestName, "AUTH_LIST_ACL"},
		{UserNotExist, ResponseName, "USER_NOT_EXIST"},
		{ViewMessageByID, RequestName, "VIEW_MESSAGE_BY_ID"},
		{-1, RequestName, "REQUEST(-1)"},
		{Success, ResponseName, "SUCCESS"},
		{FlushDiskTimeout, ResponseName, "FLUSH_DISK_TIMEOUT"},
		{TransactionStateUnknow, ResponseName, "TRANSACTION_STATE_UNKNOW"},
		{LMQQuotaExceeded, ResponseName, "LMQ_QUOTA_EXCEEDED"},
		{777, ResponseName, "CODE(777)"},
	} {
		if got := tc.name(tc.c); got != tc.expected {
			t.Errorf("name of %d: %q, want %q", tc.c, got, tc.expected)
		}
	}
}

// TestEveryCodeNamed: each constant of request.go (response.go) has a
// request (response) name of its own, in Apache's upper-case form.
func TestEveryCodeNamed(t *testing.T) {
	for file, name := range map[string]func(int32) string{"request.go": RequestName, "response.go": ResponseName} {
		f, err := parser.ParseFile(token.NewFileSet(), file, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		seen := map[string]string{}
		for _, d := range f.Decls {
			g, ok := d.(*ast.GenDecl)
			if !ok || g.Tok != token.CONST {
				continue
			}
			for _, spec := range g.Specs {
				vs := spec.(*ast.ValueSpec)
				v, err := strconv.ParseInt(vs.Values[0].(*ast.BasicLit).Value, 10, 32)
				if err != nil {
					t.Fatalf("%s: %s: %v", file, vs.Names[0].Name, err)
				}
				n := name(int32(v))
				if n != strings.ToUpper(n) || strings.Contains(n, "(") {
					t.Errorf("%s: %s (%d) is named %q", file, vs.Names[0].Name, v, n)
				}
				if other, dup := seen[n]; dup {
					t.Errorf("%s: %s and %s are both %q", file, other, vs.Names[0].Name, n)
				}
				seen[n] = vs.Names[0].Name
			}
		}
		if len(seen) < 40 {
			t.Errorf("%s: only %d constants read", file, len(seen))
		}
	}
}
