-- requires: int64.lua
-- ScriptTest: fails in its own body (ARGV[1] 'here') or inside int64.lua ('there').
local fmt = select(13, int64())
if ARGV[1] == 'there' then
  return fmt(nil)
end
local missing = nil
return missing + 1
