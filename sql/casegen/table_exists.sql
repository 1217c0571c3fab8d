SELECT count(*) FROM information_schema.tables WHERE table_schema = $schema AND table_name = $name;
