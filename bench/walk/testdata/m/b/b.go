package b

func G() {}

func K() {}
