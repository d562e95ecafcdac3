package config

type Config struct {
	Used     int    `key:"used"`
	ViaHelp  string `key:"viaHelp"`
	Shown    bool   `key:"shown" effect:"none"`
	Unused   bool   `key:"unused" effect:"none"`
	Checked  int    `key:"checked" effect:"none"`
	Forgot   int    `key:"forgot"`
	Misnamed int    `key:"misnamed" effect:"none"`
}

func (c *Config) Dir() string { return c.ViaHelp }

func (c *Config) Validate() bool { return c.Checked > 0 }
