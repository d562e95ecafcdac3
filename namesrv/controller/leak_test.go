package controller

import (
	"testing"

	"github.com/rmqgo/rmq/internal/testutil"
)

func TestMain(m *testing.M) { testutil.VerifyNoLeaks(m) }
