"""Pure values of tether: ids, statuses, domain records, errors and the clock. No I/O."""
