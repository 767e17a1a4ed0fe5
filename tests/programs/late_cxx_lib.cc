// SPDX-License-Identifier: MIT
/*
 * tests/programs/late_cxx_lib.cc - C++ work for tests/programs/late_cxx: a
 * library that brings the C++ runtime into a C process after start, as
 * Python's extensions do.  Strings grown by libstdc++'s own code (reserve,
 * append, an ostringstream's buffer) are freed by code inlined here, and the
 * other way round, so a process where libstdc++'s calls to operator new
 * and delete bind elsewhere than everyone else's frees a block on the
 * wrong allocator.
 */
#include <cstdint>
#include <map>
#include <sstream>
#include <string>
#include <vector>

extern "C" uint64_t late_cxx_churn(int rounds);

extern "C" uint64_t late_cxx_churn(int rounds)
{
	uint64_t sum = 0;

	for (int r = 0; r < rounds; r++) {
		std::string s;
		std::ostringstream os;
		std::vector<std::string> v;
		std::map<int, std::string> m;

		s.reserve(1000 + r);
		for (int i = 0; i < 200; i++)
			s.append("alloy ");
		for (int i = 0; i < 64; i++) {
			os << i * r << ' ';
			v.push_back(s.substr(i, 40 + i));
			m[i] = os.str();
		}
		for (const auto &x : v)
			sum = sum * 31 + x.size();
		sum += m[r % 64].size() + s.size();
	}
	return sum;
}
