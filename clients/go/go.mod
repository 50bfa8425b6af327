module dev.tally/client

go 1.19
