-- requires: script-test-cycle.lua
return 1
