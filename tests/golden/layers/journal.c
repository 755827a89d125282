/* --------------------------------------------------------------------------
 * layer journal (journal: mem[mem]) of items: checkpoint=4194304, group=2, sync=true
 * ------------------------------------------------------------------------ */
/* transactions of file "items.db": sync, group 2, checkpoint every 4194304 journal bytes */
/* end of layer journal of items ----------------------------------------- */
