module example.com/w

go 1.26
