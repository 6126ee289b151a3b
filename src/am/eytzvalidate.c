/*
 * eytzvalidate.c
 *		amvalidate for eytzgpu operator classes.
 *
 * An eytzgpu operator family holds btree-style comparison operators
 * (strategies 1-5: <, <=, =, >=, >) and comparison functions (support 1,
 * int4 fn(lefttype, righttype)), possibly cross-type as in btree's integer
 * family.  Every opclass needs all five operators and support 1 for its own
 * type, and every cross-type operator needs the matching comparison function
 * (scans use it to translate the bound into a key range).
 */
#include "postgres.h"

#include "access/amvalidate.h"
#include "access/htup_details.h"
#include "access/stratnum.h"
#include "catalog/pg_amop.h"
#include "catalog/pg_amproc.h"
#include "catalog/pg_opclass.h"
#include "catalog/pg_opfamily.h"
#include "catalog/pg_type.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/regproc.h"
#include "utils/syscache.h"

#include "eytzam.h"

static char *
opfamily_name(Oid opfamilyoid)
{
	HeapTuple	tup = SearchSysCache1(OPFAMILYOID, ObjectIdGetDatum(opfamilyoid));
	char	   *name;

	if (!HeapTupleIsValid(tup))
		elog(ERROR, "cache lookup failed for operator family %u", opfamilyoid);
	name = pstrdup(NameStr(((Form_pg_opfamily) GETSTRUCT(tup))->opfname));
	ReleaseSysCache(tup);
	return name;
}

bool
eytz_validate(Oid opclassoid)
{
	bool		result = true;
	HeapTuple	classtup;
	Form_pg_opclass classform;
	Oid			opfamilyoid;
	Oid			opcintype;
	char	   *opfamilyname;
	CatCList   *oprlist;
	CatCList   *proclist;
	int			i,
				j;
	bool		strategies[BTMaxStrategyNumber + 1] = {false};
	bool		has_cmp = false;

	classtup = SearchSysCache1(CLAOID, ObjectIdGetDatum(opclassoid));
	if (!HeapTupleIsValid(classtup))
		elog(ERROR, "cache lookup failed for operator class %u", opclassoid);
	classform = (Form_pg_opclass) GETSTRUCT(classtup);
	opfamilyoid = classform->opcfamily;
	opcintype = classform->opcintype;
	opfamilyname = opfamily_name(opfamilyoid);

	if (eytz_key_type(opcintype) == NULL)
	{
		ereport(INFO,
				(errcode(ERRCODE_INVALID_OBJECT_DEFINITION),
				 errmsg("eytzgpu operator class \"%s\" is for type %s, which eytzgpu cannot index",
						NameStr(classform->opcname), format_type_be(opcintype))));
		result = false;
	}

	proclist = SearchSysCacheList1(AMPROCNUM, ObjectIdGetDatum(opfamilyoid));
	for (i = 0; i < proclist->n_members; i++)
	{
		Form_pg_amproc procform = (Form_pg_amproc) GETSTRUCT(&proclist->members[i]->tuple);

		if (procform->amprocnum != 1)
		{
			ereport(INFO,
					(errcode(ERRCODE_INVALID_OBJECT_DEFINITION),
					 errmsg("eytzgpu operator family \"%s\" contains function %s with invalid support number %d",
							opfamilyname, format_procedure(procform->amproc),
							procform->amprocnum)));
			result = false;
			continue;
		}
		if (!check_amproc_signature(procform->amproc, INT4OID, true, 2, 2,
									procform->amproclefttype,
									procform->amprocrighttype))
		{
			ereport(INFO,
					(errcode(ERRCODE_INVALID_OBJECT_DEFINITION),
					 errmsg("eytzgpu operator family \"%s\" contains function %s with wrong signature for support number %d",
							opfamilyname, format_procedure(procform->amproc), 1)));
			result = false;
		}
		if (procform->amproclefttype == opcintype &&
			procform->amprocrighttype == opcintype)
			has_cmp = true;
	}

	oprlist = SearchSysCacheList1(AMOPSTRATEGY, ObjectIdGetDatum(opfamilyoid));
	for (i = 0; i < oprlist->n_members; i++)
	{
		Form_pg_amop oprform = (Form_pg_amop) GETSTRUCT(&oprlist->members[i]->tuple);
		bool		has_proc = false;

		if (oprform->amopstrategy < 1 || oprform->amopstrategy > BTMaxStrategyNumber ||
			oprform->amoppurpose != AMOP_SEARCH ||
			!check_amop_signature(oprform->amopopr, BOOLOID,
								  oprform->amoplefttype, oprform->amoprighttype))
		{
			ereport(INFO,
					(errcode(ERRCODE_INVALID_OBJECT_DEFINITION),
					 errmsg("eytzgpu operator family \"%s\" contains invalid operator %s with strategy %d",
							opfamilyname, format_operator(oprform->amopopr),
							oprform->amopstrategy)));
			result = false;
			continue;
		}
		for (j = 0; j < proclist->n_members; j++)
		{
			Form_pg_amproc procform = (Form_pg_amproc) GETSTRUCT(&proclist->members[j]->tuple);

			if (procform->amproclefttype == oprform->amoplefttype &&
				procform->amprocrighttype == oprform->amoprighttype)
				has_proc = true;
		}
		if (!has_proc)
		{
			ereport(INFO,
					(errcode(ERRCODE_INVALID_OBJECT_DEFINITION),
					 errmsg("eytzgpu operator family \"%s\" lacks support function 1 for operator %s",
							opfamilyname, format_operator(oprform->amopopr))));
			result = false;
		}
		if (oprform->amoplefttype == opcintype && oprform->amoprighttype == opcintype)
			strategies[oprform->amopstrategy] = true;
	}

	for (i = 1; i <= BTMaxStrategyNumber; i++)
		if (!strategies[i])
		{
			ereport(INFO,
					(errcode(ERRCODE_INVALID_OBJECT_DEFINITION),
					 errmsg("eytzgpu operator class \"%s\" is missing operator with strategy %d for type %s",
							NameStr(classform->opcname), i, format_type_be(opcintype))));
			result = false;
		}
	if (!has_cmp)
	{
		ereport(INFO,
				(errcode(ERRCODE_INVALID_OBJECT_DEFINITION),
				 errmsg("eytzgpu operator class \"%s\" is missing support function 1",
						NameStr(classform->opcname))));
		result = false;
	}

	ReleaseCatCacheList(proclist);
	ReleaseCatCacheList(oprlist);
	ReleaseSysCache(classtup);
	return result;
}
